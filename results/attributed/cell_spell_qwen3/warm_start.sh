#!/bin/bash
# The qwen3 spell_backward warm start of the testbed (results/testbed/spell-qwen3: its model
# card's command), built once into runs/testbed/spell-qwen3/warm_start (skipped when its card
# exists). From the repository root.
set -e
PY="${PY:-.venv/bin/python}"
OUT=runs/testbed/spell-qwen3/warm_start
if [ ! -f "$OUT/adaroll_model.json" ]; then
  $PY -m trainers.cli warm-start --task 'rg:spell_backward?min_word_len=3&max_word_len=8&num_train=10000' --arch qwen3 --out "$OUT" --steps 600 \
    --hidden-size 128 --num-layers 2 --no-progress
fi
