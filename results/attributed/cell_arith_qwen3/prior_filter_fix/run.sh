#!/bin/bash
# Issue 25, cell arithmetic x qwen3: the fixed prior_filter (entrants.yaml), seeds 0-2, as the
# final (../final.sh: 2,000 steps, 400-prompt test split x 8 every 250 steps). Rerun to resume.
# Finished runs are kept in ./evidence as they finish (commit it).
# Read: python results/attributed/fixed_prior_filter.py cell_arith_qwen3.
set -e
PY="${PY:-.venv/bin/python}"
bash results/attributed/cell_arith_qwen3/warm_start.sh
$PY -m trainers.cli compete --entrants results/attributed/cell_arith_qwen3/prior_filter_fix/entrants.yaml \
  --model runs/testbed/arith-qwen3/warm_start \
  --seeds 3 --first-seed 0 --steps 2000 --validation-size 400 --eval-split test \
  --eval-every 250 --eval-size none --eval-k 8 --save-minutes 10 \
  --workers 2 --threads 1 --no-progress --out runs/attributed/cell_arith_qwen3/prior_filter_fix \
  --evidence results/attributed/cell_arith_qwen3/prior_filter_fix/evidence "$@"
