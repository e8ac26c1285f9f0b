#!/bin/bash
# Issue 25, cell rg:letter_counting x gpt2: the five finalists of the main cell's screen at the
# rates this cell's sweep chose (entrants.yaml, filled from the sweep by its written rule), seeds
# 0-2, 600 steps, evaluated every 150 steps on the task's test split x 8. Rerun to resume.
# On a fresh clone too: finished runs are kept in the --evidence folder as they finish (commit it).
set -e
PY="${PY:-.venv/bin/python}"
bash results/attributed/cell_letters_gpt2/warm_start.sh
$PY -m trainers.cli compete --entrants results/attributed/cell_letters_gpt2/entrants.yaml \
  --task 'rg:letter_counting?min_words=2&max_words=5&num_train=20000' --model runs/testbed/letters-gpt2/warm_start \
  --seeds 3 --first-seed 0 --steps 600 --eval-split test \
  --eval-every 150 --eval-size none --eval-k 8 --save-minutes 10 \
  --workers 2 --threads 1 --no-progress --out runs/attributed/cell_letters_gpt2/final \
  --evidence results/attributed/cell_letters_gpt2/final "$@"
