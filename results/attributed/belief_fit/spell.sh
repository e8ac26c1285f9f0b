#!/bin/bash
# Issue 25, the fitted priors' evidence rule on rg:spell_backward x qwen3, inside TRL 1.14 with
# the recipe and warm start of results/trl_final/spell_trl114, on the task's validation split
# (200 words, disjoint from training and test) x 8 every 125 steps; seeds 100-101, 500 steps.
# Nothing here reads the test split. From the repository root, in .venv-trl114; rerun to resume.
# ENTRANTS picks the entrants file (default entrants_spell.yaml; spell_prior_filter.sh and
# spell_all.sh set it).
set -e
ENTRANTS="${ENTRANTS:-results/attributed/belief_fit/entrants_spell.yaml}"
source results/trl_recipe/recipe.sh
PY="${PY:-.venv-trl114/bin/python}"
PY="$PY" bash results/attributed/cell_spell_qwen3/warm_start.sh
$PY -m trainers.cli compete --trainer trl --entrants "$ENTRANTS" \
  --task 'rg:spell_backward?min_word_len=3&max_word_len=8&num_train=10000' \
  --model runs/testbed/spell-qwen3/warm_start --max-completion-length 10 \
  --seeds 2 --first-seed 100 --steps 500 "${TRL_RECIPE[@]}" \
  --belief-fit discounted --pilot 0 --eval-split validation --eval-every 125 --eval-size none --eval-k 8 \
  --workers 2 --threads 1 \
  --no-progress --out runs/attributed/belief_fit/spell --evidence results/attributed/belief_fit/spell "$@"
