#!/bin/bash
# Issue 25's screen: every entrant on the main cell, 2 seeds (100, 101: the final runs seeds
# 0-3, so no screen seed is a final seed), 1,500 steps, evaluated on the 400-prompt validation
# split (held out from training, disjoint from test) x 8 samples every 500 steps. Nothing here
# reads the test split. From the repository root; rerun the same command to resume after a stop.
# --belief-fit discounted --pilot 0: the fit rule and pilot these runs had (the defaults until
# 2026-12-06; an entrant that sets its own keeps it).
set -e
PY="${PY:-.venv/bin/python}"
$PY -m trainers.cli compete --entrants results/attributed/screen/entrants.yaml \
  --seeds 2 --first-seed 100 --steps 1500 --validation-size 400 --eval-split validation \
  --eval-every 500 --eval-size none --eval-k 8 --save-minutes 10 \
  --workers 2 --threads 1 --no-progress --out runs/attributed/screen --belief-fit discounted --pilot 0 "$@"
