#!/bin/bash
# Issue 26, TRL 1.16, arithmetic: seeds 4-7 of plain TRL and today's default allocator
# (bamdp-weighted-pilot2), with every setting of ../arithmetic_trl116/run.sh (the recipe, 800
# steps, the 400-prompt test split x 8 every 200 steps, the same pins), so that its seeds 0-3
# and these make one eight-seed pairing (../README.md says why, written before these ran).
# From the repository root, in .venv (TRL 1.16); rerun to resume (on a fresh clone too: the
# finished runs are kept in ./evidence as they finish). One run at a time (--workers 1): it
# shares the cores with the spell competition.
set -e
source results/trl_recipe/recipe.sh
PY="${PY:-.venv/bin/python}"
$PY -m trainers.cli compete --trainer trl --entrants results/trl_final/arithmetic_trl116_more/entrants.yaml \
  --seeds 4 --first-seed 4 --steps 800 "${TRL_RECIPE[@]}" \
  --validation-size 400 \
  --eval-split test --eval-every 200 --eval-size none --eval-k 8 --workers 1 --threads 1 \
  --no-progress --out runs/trl_final/arithmetic_trl116_more --belief-fit discounted --pilot 0 \
  --evidence results/trl_final/arithmetic_trl116_more/evidence --allow-mixed "$@"
