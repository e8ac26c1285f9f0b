"""The generation engine interface shared by ``HFEngine`` and ``VLLMEngine``.

An engine turns prompts (token ids) and a per-prompt number of samples into completions: token
ids, texts and the per-token log-probabilities of the sampled tokens. ``sync_weights(model)``
makes it generate with the trainer's current weights after an update.

Log-probabilities are those of the **sampling distribution before top-p truncation**: the
model's logits divided by the temperature (temperature 0 reads as 1). The trainer recomputes
exactly this quantity, so the two agree up to numerics. ``VLLMEngine`` returns vLLM's
``processed_logprobs``, which are exactly these at ``top_p = 1`` (the default); with
``top_p < 1`` vLLM renormalises over the nucleus, and that engine warns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class SamplingSpec:
    """How completions are sampled (temperature 0 is greedy)."""

    max_new_tokens: int = 8
    temperature: float = 1.0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        from adaroll_env.errors import check_int  # here: importing this module stays light

        check_int("max_new_tokens", self.max_new_tokens, 1)
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")


@dataclass
class Generation:
    """Completions of one ``generate`` call, flat and ordered by prompt.

    Row ``j`` answers prompt ``prompt_index[j]``; the rows of one prompt are contiguous and
    prompts come in input order. ``completion_ids`` keep the end-of-sequence token when it was
    sampled (the policy learns to stop); ``texts`` are decoded without special tokens.
    """

    prompt_index: NDArray[np.int64]
    completion_ids: list[list[int]]
    texts: list[str]
    logprobs: list[NDArray[np.float32]]
    truncated: NDArray[np.bool_]
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.completion_ids)

    @property
    def num_tokens(self) -> int:
        """Completion tokens generated."""
        return sum(len(c) for c in self.completion_ids)


@runtime_checkable
class Engine(Protocol):
    """What the trainer asks of a generation engine."""

    name: str

    def generate(
        self,
        prompt_ids: Sequence[Sequence[int]],
        counts: Sequence[int],
        sampling: SamplingSpec,
        *,
        seed: int,
    ) -> Generation:
        """``counts[i]`` completions of prompt ``i`` (0 skips it), reproducible given ``seed``."""

    def sync_weights(self, model: Any) -> None:
        """Generate with ``model``'s current weights from now on."""

    def close(self) -> None:
        """Release what the engine holds."""


def check_request(prompt_ids: Sequence[Sequence[int]], counts: Sequence[int]) -> NDArray[np.int64]:
    """Validate a generate request; returns the counts as int64."""
    c = np.asarray(counts, dtype=np.int64)
    if c.ndim != 1 or c.shape[0] != len(prompt_ids):
        raise ValueError(
            f"counts has shape {c.shape} but there are {len(prompt_ids)} prompts: give one count "
            "per prompt"
        )
    if np.any(c < 0):
        raise ValueError(f"counts must be >= 0, got {c.tolist()}")
    for i, p in enumerate(prompt_ids):
        if c[i] > 0 and len(p) == 0:
            raise ValueError(f"prompt {i} is empty: every prompt needs at least one token")
    return c
