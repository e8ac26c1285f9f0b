#!/bin/bash
# Issue 25, cell arithmetic x qwen3: the learning-rate sweep of uniform and bamdp (5e-5, 1e-4,
# 2e-4; the main cell chose its lowest rate, 1e-4, for every family, so this sweep goes lower)
# on validation, seeds 100-101, 1,000 steps, evaluated every 250 steps on the 400-prompt
# validation split x 8. Nothing here reads the test split. Rerun to resume.
# On a fresh clone too: finished runs are kept in the --evidence folder as they finish (commit it).
set -e
PY="${PY:-.venv/bin/python}"
bash results/attributed/cell_arith_qwen3/warm_start.sh
$PY -m trainers.cli compete --entrants results/attributed/cell_arith_qwen3/sweep.yaml \
  --model runs/testbed/arith-qwen3/warm_start \
  --seeds 2 --first-seed 100 --steps 1000 --validation-size 400 --eval-split validation \
  --eval-every 250 --eval-size none --eval-k 8 --save-minutes 10 \
  --workers 2 --threads 1 --no-progress --out runs/attributed/cell_arith_qwen3/sweep \
  --evidence results/attributed/cell_arith_qwen3/sweep "$@"
