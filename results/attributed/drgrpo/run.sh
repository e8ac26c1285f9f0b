#!/bin/bash
# Issue 25's step-size control on the main cell: uniform, prior_filter and bamdp with the dr_grpo
# loss (entrants.yaml), seeds 0-2, 2,000 steps, evaluated every 500 steps on the 400-prompt test
# split x 8, training draws excluding the validation prompts, as in the final. Rerun to resume.
# On a fresh clone too: finished runs are kept in ./evidence as they finish (commit it).
# --belief-fit discounted --pilot 0: the main cell's settings, of which this is a control
# (../README.md, decided before it ran).
set -e
PY="${PY:-.venv/bin/python}"
$PY -m trainers.cli compete --entrants results/attributed/drgrpo/entrants.yaml \
  --seeds 3 --first-seed 0 --steps 2000 --validation-size 400 --eval-split test \
  --eval-every 500 --eval-size none --eval-k 8 --save-minutes 10 \
  --workers 2 --threads 1 --no-progress --out runs/attributed/drgrpo \
  --evidence results/attributed/drgrpo/evidence --belief-fit discounted --pilot 0 "$@"
