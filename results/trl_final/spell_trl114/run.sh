#!/bin/bash
# Issue 26's competition inside TRL on a reasoning-gym dataset: rg:spell_backward with the
# testbed's qwen3 warm start (results/testbed/spell-qwen3), in TRL 1.14 so that C-GRPO (trl-cgrpo
# needs TRL < 1.15) enters beside plain TRL, the subclass's default allocator and
# knowledge_gradient, all paired with plain TRL 1.14. The recipe chosen on arithmetic's validation
# split (B = 64, G = 8, lr 1e-4 constant, dapo loss, group-scaled rewards); seeds 0-2, 500 steps
# (the testbed's uniform run learned 11 -> 32 % in 500 steps), evaluated every 125 steps on the
# task's test split x 8. From the repository root, in .venv-trl114 (make test-trl114 builds it);
# rerun to resume.
# --belief-fit discounted --pilot 0: the fit rule and pilot these runs had (the defaults until
# 2026-12-06; an entrant that sets its own keeps it).
# --evidence: each finished run's small files go to spell_trl114/evidence as it finishes (commit
# them); on a fresh clone this script restores them and runs only the rest (runs in progress
# when a session ends start again on the next clone).
set -e
source results/trl_recipe/recipe.sh
PY="${PY:-.venv-trl114/bin/python}"
PY="$PY" bash results/attributed/cell_spell_qwen3/warm_start.sh
$PY -m trainers.cli compete --trainer trl --entrants results/trl_final/spell_trl114/entrants.yaml \
  --task 'rg:spell_backward?min_word_len=3&max_word_len=8&num_train=10000' \
  --model runs/testbed/spell-qwen3/warm_start --max-completion-length 10 \
  --seeds 3 --first-seed 0 --steps 500 "${TRL_RECIPE[@]}" \
  --eval-split test --eval-every 125 --eval-size none --eval-k 8 --workers 2 --threads 1 \
  --no-progress --out runs/trl_final/spell_trl114 --belief-fit discounted --pilot 0 \
  --evidence results/trl_final/spell_trl114/evidence "$@"
