#!/bin/bash
# Issue 25, the utility stage: bamdp under `informative` and `snr(2)` on the main cell
# (arithmetic, the tiny warm start), with every setting of ../screen/screen.sh (seeds 100-101,
# 1,500 steps, the 400-prompt validation split x 8 every 500 steps, the same pins). Nothing here
# reads the test split. From the repository root; rerun to resume (on a fresh clone too: the
# finished runs are kept in ./evidence as they finish). Read by tabulate.py (README.md's rule).
set -e
PY="${PY:-.venv/bin/python}"
$PY -m trainers.cli compete --entrants results/attributed/utility/entrants.yaml \
  --seeds 2 --first-seed 100 --steps 1500 --validation-size 400 --eval-split validation \
  --eval-every 500 --eval-size none --eval-k 8 --save-minutes 10 \
  --workers 2 --threads 1 --no-progress --out runs/attributed/utility --belief-fit discounted --pilot 0 \
  --evidence results/attributed/utility/evidence "$@"
