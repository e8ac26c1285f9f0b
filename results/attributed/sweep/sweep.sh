#!/bin/bash
# Issue 25's learning-rate sweep (1e-4 and 4e-4; 2e-4 is the screen's) for prior_filter,
# knowledge_gradient and greso: the same cell, seeds, steps and validation evaluation as the
# screen (../screen/screen.sh). Nothing here reads the test split. From the repository root;
# rerun the same command to resume after a stop.
# --belief-fit discounted --pilot 0: the fit rule and pilot these runs had (the defaults until
# 2026-12-06; an entrant that sets its own keeps it).
set -e
PY="${PY:-.venv/bin/python}"
$PY -m trainers.cli compete --entrants results/attributed/sweep/entrants.yaml \
  --seeds 2 --first-seed 100 --steps 1500 --validation-size 400 --eval-split validation \
  --eval-every 500 --eval-size none --eval-k 8 --save-minutes 10 \
  --workers 2 --threads 1 --no-progress --out runs/attributed/sweep --belief-fit discounted --pilot 0 "$@"
