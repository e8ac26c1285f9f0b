#!/bin/bash
# Issue 26's competition inside TRL 1.14 on arithmetic: the same recipe and evaluation as
# ../arithmetic_trl116/run.sh, with C-GRPO (trl-cgrpo, its documented defaults) beside plain TRL
# 1.14 and AllocatingGRPOTrainer's default allocator; seeds 0-3, 800 steps. C-GRPO's budget
# varies per prompt: read it against generated rollouts. From the repository root, in
# .venv-trl114 (TRL 1.14 with the cgrpo extra: make test-trl114 builds it); rerun to resume.
# --belief-fit discounted --pilot 0: the fit rule and pilot these runs had (the defaults until
# 2026-12-06; an entrant that sets its own keeps it).
set -e
source results/trl_recipe/recipe.sh
PY="${PY:-.venv-trl114/bin/python}"
$PY -m trainers.cli compete --trainer trl --entrants results/trl_final/arithmetic_trl114/entrants.yaml \
  --seeds 4 --first-seed 0 --steps 800 "${TRL_RECIPE[@]}" \
  --validation-size 400 \
  --eval-split test --eval-every 200 --eval-size none --eval-k 8 --workers 2 --threads 1 \
  --no-progress --out runs/trl_final/arithmetic_trl114 --belief-fit discounted --pilot 0 "$@"
