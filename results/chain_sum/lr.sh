#!/bin/bash
# chain_sum x gpt2 (the testbed cell whose GRPO run lost accuracy at lr 2e-4): the same GRPO run
# at lower learning rates, 300 steps, evaluated on the task's own 200-prompt validation split
# every 100 steps (test not read). Needs the testbed's warm start (scripts/bench_testbed.py).
set -e
PY="${PY:-.venv/bin/python}"
TASK='rg:chain_sum?min_terms=2&max_terms=3&min_digits=1&max_digits=2&num_train=20000'
for lr in 5e-5 2e-4; do
  $PY -m trainers.cli grpo --task "$TASK" --model runs/testbed/chain-gpt2/warm_start \
    --allocator uniform --batch-size 64 --group-size 8 --max-completion-length 8 --lr "$lr" \
    --steps 300 --eval-split validation --eval-every 100 --eval-size none --eval-k 8 --seed 100 \
    --threads 1 --no-progress --no-tensorboard --out "runs/chain_sum/lr$lr" --resume
done
