#!/bin/bash
# The qwen3 arithmetic warm start of the testbed (results/testbed/arith-qwen3: its model card's
# command), built once into runs/testbed/arith-qwen3/warm_start (skipped when its card exists;
# resumed from its checkpoint when stopped). From the repository root.
set -e
PY="${PY:-.venv/bin/python}"
OUT=runs/testbed/arith-qwen3/warm_start
if [ ! -f "$OUT/adaroll_model.json" ]; then
  $PY -m trainers.cli warm-start --arch qwen3 --out "$OUT" --steps 3000 --hidden-size 128 \
    --num-layers 2 --no-progress
fi
