#!/bin/bash
# Issue 25, cell rg:spell_backward x qwen3: the five finalists of the main cell's screen at the
# rates this cell's sweep chose (entrants.yaml, filled from the sweep by its written rule), seeds
# 0-2, 1,000 steps, evaluated every 250 steps on the task's test split x 8. Rerun to resume.
# On a fresh clone too: finished runs are kept in the --evidence folder as they finish (commit it).
set -e
PY="${PY:-.venv/bin/python}"
bash results/attributed/cell_spell_qwen3/warm_start.sh
$PY -m trainers.cli compete --entrants results/attributed/cell_spell_qwen3/entrants.yaml \
  --task 'rg:spell_backward?min_word_len=3&max_word_len=8&num_train=10000' --model runs/testbed/spell-qwen3/warm_start --max-completion-length 10 \
  --seeds 3 --first-seed 0 --steps 1000 --eval-split test \
  --eval-every 250 --eval-size none --eval-k 8 --save-minutes 10 \
  --workers 2 --threads 1 --no-progress --out runs/attributed/cell_spell_qwen3/final \
  --evidence results/attributed/cell_spell_qwen3/final "$@"
