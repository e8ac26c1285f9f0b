#!/bin/bash
# Recurring prompts against memorisation (issue 13, item 2). The same two entrants, 1,000 steps,
# 2 seeds, on a 2,000-prompt training set (at B = 64 each prompt comes back about every 31
# steps) and on the usual 50,000 (almost none recurs); 400 held-out and 400 training prompts
# evaluated with 8 samples each at steps 0, 500 and 1,000.
set -e
PY="${PY:-.venv/bin/python}"
for size in 2000 50000; do
  $PY -m trainers.cli compete --entrants results/recurring_prompts/recur_entrants.yaml --seeds 2 --steps 1000 \
    --eval-every 500 --eval-size none --eval-k 8 --eval-train 400 --workers 2 --no-progress \
    --task-size $size --out runs/recur/task$size
done
