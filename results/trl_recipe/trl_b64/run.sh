#!/bin/bash
# Plain TRL (uniform = TRL's GRPOTrainer, bit-identical) in the set-up where our trainer learns:
# B = 64, G = 8, lr 2e-4 and 1e-4 constant, dapo loss, group-scaled rewards, 400 steps, the tiny
# warm start, arithmetic, evaluated every 100 steps on the 400-prompt validation split (test not
# read), seeds 100 and 101. From the repository root; rerun to resume.
set -e
PY="${PY:-.venv/bin/python}"
$PY -m trainers.cli compete --trainer trl --entrants results/trl_recipe/trl_b64/entrants.yaml \
  --seeds 2 --first-seed 100 --steps 400 --batch-size 64 --group-size 8 --lr-schedule constant \
  --loss-type dapo --scale-rewards group --validation-size 400 --eval-split validation \
  --eval-every 100 --eval-size none --eval-k 4 --workers 1 --threads 1 --no-progress \
  --out runs/trl_recipe/trl_b64 "$@"
