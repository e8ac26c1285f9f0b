"""The rollouts of the step in progress, the allocation contract of a round, and collation.

``Rollouts`` gathers, per question of a rank's batch, the completions a step generated (ids,
engine log-probs, rewards, truncation) with the step's counters; ``Rollouts.add`` records one
``Generation``. ``check_counts`` is the contract a round's allocation must meet (integers, the
round's size, the caps). ``collate`` lays prompt and completion ids out for one forward pass
(prompts left-padded so every completion starts at the same column); ``pad_rows`` and
``fit_row`` bring ragged per-token rows to one width.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from adaroll_env import model as am

#: a reward at or above this counts as a success for the beliefs and the allocation state.
SUCCESS_THRESHOLD = 0.5


@dataclass
class RoundResult:
    """What one ``run_round`` produced (arrays are per question of this rank's batch)."""

    counts: NDArray[np.int64]
    successes: NDArray[np.int64]
    utility_gain: float
    done: bool
    observation: dict[str, NDArray[np.float32]]
    seconds: float


class Rollouts:
    """The completions of the step in progress, per question of this rank's batch."""

    def __init__(self, num_questions: int) -> None:
        self.completion_ids: list[list[list[int]]] = [[] for _ in range(num_questions)]
        self.logprobs: list[list[NDArray[np.float32]]] = [[] for _ in range(num_questions)]
        self.rewards: list[list[float]] = [[] for _ in range(num_questions)]
        self.truncated: list[list[bool]] = [[] for _ in range(num_questions)]
        self.errors = 0
        self.tokens = 0
        self.gen_seconds = 0.0
        self.alloc_seconds = 0.0
        self.rounds = 0

    def add(self, gen: Any, rewards: NDArray[np.float64], errors: int) -> NDArray[np.int64]:
        """Record one round's ``Generation`` and its rewards; successes per question."""
        successes = np.zeros(len(self.rewards), dtype=np.int64)
        for j, q in enumerate(gen.prompt_index.tolist()):
            self.completion_ids[q].append(gen.completion_ids[j])
            self.logprobs[q].append(gen.logprobs[j])
            self.rewards[q].append(float(rewards[j]))
            self.truncated[q].append(bool(gen.truncated[j]))
            successes[q] += int(rewards[j] >= SUCCESS_THRESHOLD)
        self.errors += errors
        self.tokens += gen.num_tokens
        self.gen_seconds += gen.seconds
        self.rounds += 1
        return successes


def check_counts(p: am.AllocationParams, s: am.AllocationState, counts: Any) -> NDArray[np.int64]:
    """``counts`` as int64 if it is a valid allocation of the next round, else ``ValueError``:
    one non-negative integer per question, summing to the round's size, within the caps."""
    want = am.next_round_size(p, s)
    c = np.asarray(counts)
    if c.shape != (p.num_questions,) or not np.issubdtype(c.dtype, np.number):
        raise ValueError(
            f"invalid allocation: counts must be {p.num_questions} integers, got shape {c.shape}"
        )
    if not np.all(np.isfinite(c)) or not np.all(c == np.round(c)) or np.any(c < 0):
        raise ValueError(f"invalid allocation {c.tolist()}: counts must be non-negative integers")
    c = c.astype(np.int64)
    if int(c.sum()) != want:
        raise ValueError(
            f"invalid allocation {c.tolist()}: it hands out {int(c.sum())} rollouts but this "
            f"round is {want} (min(round size, budget left))"
        )
    over = np.flatnonzero(c > am.capacity(p, s))
    if over.size:
        raise ValueError(
            f"invalid allocation {c.tolist()}: question {int(over[0])} exceeds its cap "
            f"(max_group={p.max_group})"
        )
    return c


@dataclass
class Collated:
    """One forward pass's tensors: ids and attention ``[b, L]``, positions ``[b, L]``, the
    completion targets and mask ``[b, T]``; completions start at column ``prompt_width``."""

    ids: torch.Tensor
    attention: torch.Tensor
    positions: torch.Tensor
    targets: torch.Tensor
    mask: torch.Tensor
    prompt_width: int


def collate(
    prompts: list[list[int]], completions: list[list[int]], width: int, pad: int
) -> Collated:
    """Prompts left-padded to a common width ``P``, completions right-padded to ``width``."""
    P = max(len(p) for p in prompts)
    L = P + width
    n = len(prompts)
    ids = torch.full((n, L), pad, dtype=torch.long)  # [b, L]
    att = torch.zeros((n, L), dtype=torch.long)  # [b, L]
    mask = torch.zeros((n, width), dtype=torch.float32)  # [b, T]
    targets = torch.full((n, width), pad, dtype=torch.long)  # [b, T]
    for k, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        start = P - len(p)  # left-pad the prompt so completions start at column P
        ids[k, start:P] = torch.tensor(p)
        ids[k, P : P + len(c)] = torch.tensor(c, dtype=torch.long)
        att[k, start : P + len(c)] = 1
        targets[k, : len(c)] = torch.tensor(c, dtype=torch.long)
        mask[k, : len(c)] = 1.0
    pos = (att.cumsum(-1) - 1).clamp(min=0)  # [b, L]
    return Collated(ids, att, pos, targets, mask, P)


def pad_rows(rows: list[NDArray[np.float32]], width: int, device: Any) -> torch.Tensor:
    """Ragged float rows as ``[b, width]`` (zero-padded or cut), on ``device``."""
    out = torch.zeros((len(rows), width), dtype=torch.float32)  # [b, T]
    for k, r in enumerate(rows):
        n = min(len(r), width)
        out[k, :n] = torch.from_numpy(np.asarray(r[:n], dtype=np.float32))
    return out.to(device)


def fit_row(row: torch.Tensor, width: int) -> torch.Tensor:
    """One row cut or zero-padded to ``width``."""
    if row.shape[0] >= width:
        return row[:width]
    return torch.nn.functional.pad(row, (0, width - row.shape[0]))
