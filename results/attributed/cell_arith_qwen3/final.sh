#!/bin/bash
# Issue 25, cell arithmetic x qwen3: the five finalists of the main cell's screen at the rates
# this cell's sweep chose (entrants.yaml, filled from sweep's result by its written rule), seeds
# 0-2, 2,000 steps, evaluated every 250 steps on the 400-prompt test split x 8. Nothing is chosen
# from it. Rerun to resume.
# On a fresh clone too: finished runs are kept in the --evidence folder as they finish (commit it).
set -e
PY="${PY:-.venv/bin/python}"
bash results/attributed/cell_arith_qwen3/warm_start.sh
$PY -m trainers.cli compete --entrants results/attributed/cell_arith_qwen3/entrants.yaml \
  --model runs/testbed/arith-qwen3/warm_start \
  --seeds 3 --first-seed 0 --steps 2000 --validation-size 400 --eval-split test \
  --eval-every 250 --eval-size none --eval-k 8 --save-minutes 10 \
  --workers 2 --threads 1 --no-progress --out runs/attributed/cell_arith_qwen3/final \
  --evidence results/attributed/cell_arith_qwen3/final "$@"
