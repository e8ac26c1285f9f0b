#!/bin/bash
# Why the first TRL competitions lost held-out accuracy: the same set-up in adaroll grpo (uniform,
# the tiny warm start, arithmetic, G = 8, 400 steps), B = 16 against B = 64 at several learning
# rates, evaluated on the 400-prompt validation split (held out from training; test unread),
# seeds 100 and 101. One run at a time, one torch thread. From the repository root.
set -e
PY="${PY:-.venv/bin/python}"
OUT="${OUT:-runs/trl_recipe/batch_lr}"
for seed in 100 101; do
  for cfg in "16 2e-4" "16 1e-4" "16 5e-5" "16 2.5e-5" "64 2e-4"; do
    set -- $cfg
    dir="$OUT/B$1_lr$2_seed$seed"
    [ -f "$dir/DONE" ] && continue
    $PY -m trainers.cli grpo --allocator uniform --batch-size "$1" --group-size 8 --steps 400 \
      --lr "$2" --validation-size 400 --eval-split validation --eval-every 100 --eval-size none \
      --eval-k 4 --seed "$seed" --threads 1 --no-progress --no-tensorboard --out "$dir" --resume
  done
done
mkdir -p results/trl_recipe/batch_lr
for d in "$OUT"/*/; do n=$(basename "$d"); cp "$d/eval.jsonl" "results/trl_recipe/batch_lr/$n.eval.jsonl"; done
