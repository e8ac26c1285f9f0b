"""Tabulate the three entrants of the final competition together (``table_all.md``).

``runs/final_all/runs`` holds links to ``runs/final/runs/{uniform,bamdp-snr}`` and
``runs/final2/runs/bamdp-snr-2rounds``; run from the directory that holds ``runs/`` and
``final_all_entrants.yaml``, with the repository on ``PYTHONPATH``.
"""

import json
from pathlib import Path

from trainers.experiments.compete import CompeteConfig, tabulate
from trainers.grpo import GRPOConfig

cfg = CompeteConfig(
    entrants="final_all_entrants.yaml",
    seeds=4,
    workers=1,
    out="runs/final_all",
    baseline="uniform",
    grpo=GRPOConfig(steps=4000, eval_every=500, eval_size=None, eval_k=8),
)
summary = tabulate(cfg)
Path("runs/final_all/summary.json").write_text(json.dumps(summary, indent=1, default=str))
