#!/bin/bash
# Issue 25's final on the main cell (arithmetic, the tiny warm start): the five finalists chosen on
# validation (../screen, ../sweep), seeds 0-3, 4,000 steps, evaluated on the 400-prompt test split
# x 8 samples every 500 steps. Training draws exclude the 400 validation prompts, as in the screen.
# Nothing is chosen from this table. From the repository root; rerun the same command to resume
# after a stop (finished runs are skipped, the others continue from their checkpoints).
# --belief-fit discounted --pilot 0: the fit rule and pilot these runs had (the defaults until
# 2026-12-06; an entrant that sets its own keeps it).
set -e
PY="${PY:-.venv/bin/python}"
$PY -m trainers.cli compete --entrants results/attributed/final_main/entrants.yaml \
  --seeds 4 --first-seed 0 --steps 4000 --validation-size 400 --eval-split test \
  --eval-every 500 --eval-size none --eval-k 8 --save-minutes 10 \
  --workers 2 --threads 1 --no-progress --out runs/attributed/final_main --belief-fit discounted --pilot 0 "$@"
