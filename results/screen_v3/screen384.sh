#!/bin/bash
# The simulator's best two-round schedule (384 + 128 at N = 512) in real training, with the
# screen's settings (results/screen_v3/screen.sh); uniform's runs are the screen's (same seeds and
# settings; no change since touches a uniform step).
set -e
PY="${PY:-.venv/bin/python}"
$PY -m trainers.cli compete --allocators bamdp --round-schedule 384,128 --seeds 2 --steps 1000 \
  --eval-every 250 --eval-size none --eval-k 8 --workers 2 --utility 'snr(8)' \
  --belief-prior fitted --belief-group level --no-progress --out runs/screen/s384
