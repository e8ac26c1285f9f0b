"""Tabulate the screen's entrants with the default schedule's (runs/screen_all/runs holds links)."""

import json
from pathlib import Path

from trainers.experiments.compete import CompeteConfig, tabulate
from trainers.grpo import GRPOConfig

cfg = CompeteConfig(
    entrants="screen_all_entrants.yaml",
    seeds=2,
    workers=1,
    out="runs/screen_all",
    baseline="uniform",
    grpo=GRPOConfig(steps=1000, eval_every=250, eval_size=None, eval_k=8),
)
Path("runs/screen_all/summary.json").write_text(json.dumps(tabulate(cfg), indent=1, default=str))
