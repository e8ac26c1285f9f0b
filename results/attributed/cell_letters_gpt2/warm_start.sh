#!/bin/bash
# The gpt2 letter_counting warm start (results/letter_counting: its model card's command, weights
# sha256 453964fc0e31...), built once into runs/testbed/letters-gpt2/warm_start (skipped when its
# card exists). From the repository root.
set -e
PY="${PY:-.venv/bin/python}"
OUT=runs/testbed/letters-gpt2/warm_start
if [ ! -f "$OUT/adaroll_model.json" ]; then
  $PY -m trainers.cli warm-start --task 'rg:letter_counting?min_words=2&max_words=5&num_train=20000' --arch gpt2 --out "$OUT" --steps 1500 \
    --hidden-size 128 --num-layers 2 --context 160 --report-split validation --no-progress
fi
