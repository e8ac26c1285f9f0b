#!/bin/bash
# Third entrant of the final competition (issue 13): bamdp snr(8) with level-grouped fitted
# priors in two equal rounds (final_entrants_r2.yaml), the same settings and seeds as final.sh.
# Run from the repo root with the entrants file there, as final.sh; it resumes after a stop.
# Started with --workers 1 and resumed with --workers 2 (one torch thread each).
set -e
PY="${PY:-.venv/bin/python}"
$PY -m trainers.cli compete --entrants final_entrants_r2.yaml --seeds 4 --steps 4000 \
  --eval-every 500 --eval-size none --eval-k 8 --workers 2 --no-progress --out runs/final2
