#!/bin/bash
# Issue 25, cell rg:spell_backward x qwen3: the learning-rate sweep of uniform and bamdp (1e-4,
# 2e-4, 4e-4: the testbed's uniform run learned fast at 2e-4, 11 -> 32 % in 500 steps) on the
# task's own validation split (200 words, disjoint from training and test), seeds 100-101, 500
# steps, evaluated every 125 steps x 8. Nothing here reads the test split. Rerun to resume.
# On a fresh clone too: finished runs are kept in the --evidence folder as they finish (commit it).
set -e
PY="${PY:-.venv/bin/python}"
bash results/attributed/cell_spell_qwen3/warm_start.sh
$PY -m trainers.cli compete --entrants results/attributed/cell_spell_qwen3/sweep.yaml \
  --task 'rg:spell_backward?min_word_len=3&max_word_len=8&num_train=10000' --model runs/testbed/spell-qwen3/warm_start --max-completion-length 10 \
  --seeds 2 --first-seed 100 --steps 500 --eval-split validation \
  --eval-every 125 --eval-size none --eval-k 8 --save-minutes 10 \
  --workers 2 --threads 1 --no-progress --out runs/attributed/cell_spell_qwen3/sweep \
  --evidence results/attributed/cell_spell_qwen3/sweep "$@"
