"""The data-parallel ranks of a run, and the few collective operations the trainer needs.

``Ranks`` holds the ``accelerate.Accelerator`` (None in a single process), this process's rank,
the number of processes and the device; ``sum`` adds figures over the ranks (what step reports
and evaluations report for the whole batch), ``most`` takes the largest integer, ``from_rank0``
broadcasts rank 0's value. With one process each is the identity and needs no accelerator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["Ranks"]


@dataclass(frozen=True)
class Ranks:
    """The processes of a run (``world`` of them; this one is ``rank``)."""

    accelerator: Any = None
    rank: int = 0
    world: int = 1
    device: torch.device = torch.device("cpu")  # noqa: RUF009 (immutable)

    def sum(self, values: dict[str, float]) -> dict[str, float]:
        """``values`` summed over the ranks."""
        if self.world == 1:
            return dict(values)
        keys = sorted(values)
        x = torch.tensor([values[k] for k in keys], dtype=torch.float64, device=self.device)
        total = self.accelerator.reduce(x, reduction="sum")
        return dict(zip(keys, total.cpu().tolist(), strict=True))

    def most(self, value: int) -> int:
        """The largest of the ranks' ``value``."""
        if self.world == 1:
            return int(value)
        n = torch.tensor([int(value)], device=self.device)
        return int(self.accelerator.gather(n).max().item())

    def from_rank0(self, value: float) -> float:
        """``value`` as rank 0 has it."""
        if self.world == 1:
            return value
        from accelerate.utils import broadcast_object_list

        box = [value]
        broadcast_object_list(box, from_process=0)
        return float(box[0])
