"""adaroll allocators inside TRL: ``AllocatingGRPOTrainer``, a subclass of ``trl.GRPOTrainer``.

Rooms (``trainers.trl.``):

- ``trainer``: ``AllocatingGRPOTrainer`` (TRL's hooks, the contract with TRL in its docstring),
  ``TRL_LINES``, ``TRL_RANGE`` and ``check_trl_version``; importing it needs the ``trl`` extra;
- ``data_order``: a resumed run reads its prompts in the unstopped run's order (a fix of TRL's
  resume, for ``AllocatingGRPOTrainer``, C-GRPO's trainer or a plain ``trl.GRPOTrainer``);
- ``adapters``: the TRL-free pieces (an adaroll task as a TRL dataset and reward, prompt keys,
  the per-batch allocation record, argument checks), importable without TRL.

The documented path stays ``from trainers.trl import AllocatingGRPOTrainer``; each name is
resolved on first use, so ``from trainers.trl import task_dataset`` needs no TRL.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    **dict.fromkeys(
        [
            "AllocatingGRPOTrainer",
            "RECORDS_KEPT",
            "STATE_FILE",
            "TRL_LINES",
            "TRL_RANGE",
            "TRL_REQUIREMENT",
            "check_trl_version",
        ],
        "trainer",
    ),
    **dict.fromkeys(
        [
            "AllocationRecord",
            "check_allocation_arguments",
            "prompt_key",
            "task_dataset",
            "task_reward",
        ],
        "adapters",
    ),
    **dict.fromkeys(["KeepDataOrder", "keep_data_order"], "data_order"),
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
