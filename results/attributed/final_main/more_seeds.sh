#!/bin/bash
# Issue 25's main cell, more seeds (plan in README.md, "Plan: eight more seeds", written before
# they ran): `uniform` and `prior_filter` exactly as in final.sh (same entrants, rates, steps,
# evaluation, --belief-fit discounted --pilot 0), seeds 4-11, into their own folder. The paired
# reading over seeds 0-11: `python results/attributed/final_main/tabulate_attribution.py
# results/attributed/final_main/evidence results/attributed/final_main/more_seeds`.
# From the repository root; rerun the same command to resume after a stop (finished runs are
# kept in the --evidence folder as they finish: commit it).
set -e
PY="${PY:-.venv/bin/python}"
$PY -m trainers.cli compete --entrants results/attributed/final_main/entrants_more_seeds.yaml \
  --seeds 8 --first-seed 4 --steps 4000 --validation-size 400 --eval-split test \
  --eval-every 500 --eval-size none --eval-k 8 --save-minutes 10 \
  --workers 2 --threads 1 --no-progress --out runs/attributed/final_main_more_seeds \
  --belief-fit discounted --pilot 0 --evidence results/attributed/final_main/more_seeds "$@"
