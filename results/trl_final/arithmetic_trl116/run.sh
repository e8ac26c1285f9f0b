#!/bin/bash
# Issue 26's competition inside TRL 1.16 on arithmetic (the tiny warm start), with the recipe
# chosen on validation (results/trl_recipe/trl_b64: B = 64, G = 8, lr 1e-4 constant, dapo loss,
# group-scaled rewards, one generation per step): plain TRL (uniform), AllocatingGRPOTrainer with
# the default allocator (bamdp: two rounds, snr(8), fitted priors) and with the best entrant of the
# attributed competition; seeds 0-3, 800 steps, evaluated every 200 steps on the 400-prompt test
# split x 8. From the repository root, in .venv (TRL 1.16); rerun to resume.
# --belief-fit discounted --pilot 0: the fit rule and pilot these runs had (the defaults until
# 2026-12-06; an entrant that sets its own keeps it).
set -e
source results/trl_recipe/recipe.sh
PY="${PY:-.venv/bin/python}"
$PY -m trainers.cli compete --trainer trl --entrants results/trl_final/arithmetic_trl116/entrants.yaml \
  --seeds 4 --first-seed 0 --steps 800 "${TRL_RECIPE[@]}" \
  --validation-size 400 \
  --eval-split test --eval-every 200 --eval-size none --eval-k 8 --workers 2 --threads 1 \
  --no-progress --out runs/trl_final/arithmetic_trl116 --belief-fit discounted --pilot 0 "$@"
