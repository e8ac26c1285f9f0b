#!/bin/bash
# Screening round of issue 13: short runs, 2 seeds, several entrants (same warm start, data order
# and budget). Run from the repository root.
set -e
PY="${PY:-.venv/bin/python}"
COMMON=(--seeds 2 --steps 1000 --eval-every 250 --eval-size none --eval-k 8 --workers 2
        --utility 'snr(8)' --belief-prior fitted --belief-group level --no-progress)
# --round-size 64: rounds of B, the trainer's default when this ran (commit 83897bd), written out
# since the default became two rounds
$PY -m trainers.cli compete --allocators uniform,bamdp --round-size 64 "${COMMON[@]}" \
  --out runs/screen/r8
$PY -m trainers.cli compete --allocators bamdp --rounds 2 "${COMMON[@]}" --out runs/screen/r2
# A third entrant (--rounds 2 --pool-size 96) was started and stopped unfinished to free the two
# cores for the final competition's third entrant; no result of it is reported.
