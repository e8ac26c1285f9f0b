#!/bin/bash
# The final competition of issue 13 (4 seeds, 4000 steps, all 400 held-out prompts x 8 samples
# every 500 steps, the same evaluation seeds for every entrant of a seed). From the repo root.
set -e
PY="${PY:-.venv/bin/python}"
$PY -m trainers.cli compete --entrants final_entrants.yaml --seeds 4 --steps 4000 \
  --eval-every 500 --eval-size none --eval-k 8 --workers 3 --no-progress --out runs/final
