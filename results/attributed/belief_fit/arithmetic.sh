#!/bin/bash
# Issue 25, the fitted priors' evidence rule on arithmetic with the tiny warm start, inside TRL
# 1.14 with the recipe of results/trl_final/arithmetic_trl114, on the 400 validation prompts
# (training draws exclude them) x 8 every 200 steps; seeds 100-101, 800 steps. Nothing here
# reads the test split. From the repository root, in .venv-trl114; rerun to resume.
# --belief-fit discounted --pilot 0: the fit rule and pilot these runs had (the defaults until
# 2026-12-06; an entrant that sets its own keeps it).
# --evidence: the finished runs are restored from the committed evidence (and new ones kept there
# as they finish), so on a fresh clone only what is missing runs.
set -e
source results/trl_recipe/recipe.sh
PY="${PY:-.venv-trl114/bin/python}"
$PY -m trainers.cli compete --trainer trl --entrants results/attributed/belief_fit/entrants_arithmetic.yaml \
  --seeds 2 --first-seed 100 --steps 800 "${TRL_RECIPE[@]}" \
  --validation-size 400 \
  --eval-split validation --eval-every 200 --eval-size none --eval-k 8 --workers 2 --threads 1 \
  --no-progress --out runs/attributed/belief_fit/arithmetic --evidence results/attributed/belief_fit/arithmetic --belief-fit discounted --pilot 0 "$@"
