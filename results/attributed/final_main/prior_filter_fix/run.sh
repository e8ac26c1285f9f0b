#!/bin/bash
# Issue 25's main cell: the fixed prior_filter (entrants.yaml), seeds 0-3, exactly as the final
# (../final.sh: 4,000 steps, test split x 8 every 500 steps, 400 validation prompts held out,
# --belief-fit discounted --pilot 0). Rerun to resume; finished runs are kept in ./evidence as
# they finish (commit it). Read: python results/attributed/fixed_prior_filter.py final_main.
set -e
PY="${PY:-.venv/bin/python}"
$PY -m trainers.cli compete --entrants results/attributed/final_main/prior_filter_fix/entrants.yaml \
  --seeds 4 --first-seed 0 --steps 4000 --validation-size 400 --eval-split test \
  --eval-every 500 --eval-size none --eval-k 8 --save-minutes 10 \
  --workers 2 --threads 1 --no-progress --out runs/attributed/final_main_prior_filter_fix \
  --belief-fit discounted --pilot 0 --evidence results/attributed/final_main/prior_filter_fix/evidence "$@"
