"""Rounds actions as integer counts: the split of a round by weights, and its inverse.

``split_round`` turns weights into the integer counts of a round (largest remainder, caps
respected); ``encode_counts`` gives the action whose split is exactly some counts. Both are pure
functions of arrays; ``adaroll_env.model.decode_action`` applies ``split_round`` to a state, and
``adaroll_env.model`` re-exports both names.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["CountsAction", "encode_counts", "encoded_counts", "split_round"]


def split_round(weights: ArrayLike, total: int, capacity: ArrayLike) -> NDArray[np.int64]:
    """Split ``total`` rollouts in proportion to ``weights`` by largest remainder.

    Ties go to the lower index. Caps are respected: what a capped question cannot take goes to
    the questions with the next-largest weights. When no question under its cap has a positive
    weight, the round is split evenly among the questions under their cap. The result sums to
    ``total`` whenever the capacities allow it (a ValueError otherwise).
    """
    w = np.asarray(weights, dtype=np.float64)
    cap = np.asarray(capacity, dtype=np.int64)
    total = int(total)
    if total < 0:
        raise ValueError(f"round size must be >= 0, got {total}")
    room = int(np.maximum(cap, 0).sum())
    if room < total:
        raise ValueError(f"round of {total} rollouts does not fit the remaining capacity {room}")
    counts = np.zeros(w.shape[0], dtype=np.int64)
    if total == 0:
        return counts
    open_ = cap > 0
    w = np.where(open_, np.maximum(w, 0.0), 0.0)
    wsum = float(w.sum())
    if wsum <= 0.0:
        w = open_.astype(np.float64)
        wsum = float(w.sum())
    quota = total * (w / wsum)
    counts = np.floor(quota).astype(np.int64)
    short = total - int(counts.sum())
    if short > 0:
        frac = quota - counts
        # Stable sort on -frac: equal fractions keep ascending index order.
        order = np.argsort(-frac, kind="stable")
        counts[order[:short]] += 1
    over = np.maximum(counts - cap, 0)
    if over.any():
        counts -= over
        spill = int(over.sum())
        for i in np.argsort(-w, kind="stable"):
            room = int(cap[i] - counts[i])
            if room > 0:
                give = min(room, spill)
                counts[i] += give
                spill -= give
                if spill == 0:
                    break
    return counts


class CountsAction(np.ndarray):  # type: ignore[type-arg]
    """A rounds action made by ``encode_counts``: the float32 weights, plus ``counts`` (the
    integer counts it encodes) so that the rounds env can refuse counts that do not sum to its
    round instead of rescaling them. Arrays derived from it (slices, arithmetic,
    ``np.asarray``) carry no counts and are plain weights."""

    counts: tuple[int, ...]


def encode_counts(counts: ArrayLike) -> NDArray[np.float32]:
    """The rounds-env action that decodes to exactly ``counts`` (for a round of Σ counts).

    Weights proportional to the counts, mapped to [-1, 1] by a = 2·w − 1 with w = counts / max.
    The result remembers the counts (``CountsAction``): a rounds env whose round is not Σ counts
    raises ``ValueError`` rather than hand out rescaled counts.
    """
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 1 or np.any(c < 0) or np.any(c != np.floor(c)):
        raise ValueError(f"counts must be a 1-D array of non-negative integers, got {counts!r}")
    top = float(c.max()) if c.size else 0.0
    if top <= 0:
        weights = np.full(c.shape, -1.0, dtype=np.float32)
    else:
        weights = np.asarray(2.0 * (c / top) - 1.0, dtype=np.float32)
    out = weights.view(CountsAction)
    out.counts = tuple(int(x) for x in c)
    return out


def encoded_counts(action: object) -> tuple[int, ...] | None:
    """The counts an ``encode_counts`` action stands for, or None for plain weights."""
    return getattr(action, "counts", None) if isinstance(action, CountsAction) else None
