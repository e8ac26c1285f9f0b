#!/bin/bash
# Issue 25, cell rg:letter_counting x gpt2: the learning-rate sweep of uniform and bamdp (5e-5,
# 1e-4, 2e-4) on the task's own validation split (200 questions), seeds 100-101, 300 steps,
# evaluated every 100 steps x 8. Nothing here reads the test split. Rerun to resume.
# On a fresh clone too: finished runs are kept in the --evidence folder as they finish (commit it).
set -e
PY="${PY:-.venv/bin/python}"
bash results/attributed/cell_letters_gpt2/warm_start.sh
$PY -m trainers.cli compete --entrants results/attributed/cell_letters_gpt2/sweep.yaml \
  --task 'rg:letter_counting?min_words=2&max_words=5&num_train=20000' --model runs/testbed/letters-gpt2/warm_start \
  --seeds 2 --first-seed 100 --steps 300 --eval-split validation \
  --eval-every 100 --eval-size none --eval-k 8 --save-minutes 10 \
  --workers 2 --threads 1 --no-progress --out runs/attributed/cell_letters_gpt2/sweep \
  --evidence results/attributed/cell_letters_gpt2/sweep "$@"
