"""GRPO with rollouts allocated per prompt: the math, as pure functions (and the config's name).

The package ``trainers.grpo`` re-exports these functions beside ``GRPOConfig``
(``trainers.grpo.config``). The trainer (``trainers.grpo.trainer``) orchestrates; this module
holds what it computes with:
``group_advantages`` on ragged groups, per-token log-probabilities, the PPO-clip surrogate, the KL
penalty and the loss normalisations of ``loss_type``. Each is a small function with keyword-only
options and a shape comment on each tensor line.

Departures from DeepSeekMath GRPO (Shao et al. 2024, §4.1):

1. **Ragged groups.** Question ``i`` gets ``k_i`` rollouts chosen by an allocator (``Σ k_i = N``)
   instead of a fixed ``G``. Advantages are grouped by question id (the verl approach), never by
   reshaping to ``[B, G]``. A group of size 0 contributes nothing; a group of size 1 or with zero
   reward variance gets advantage exactly 0 (no mean-0/std-1 fallback).
2. **Reward scaling is a choice** (``scale_rewards``, TRL's names): ``group`` divides by the
   group's std as in the paper, ``batch`` by the std of the whole batch, ``none`` by nothing
   (Dr. GRPO). The std is the unbiased one with ``1e-4`` added, as TRL does.
3. **Loss normalisation is a choice** (``loss_type``): ``grpo`` averages tokens within a sequence
   then sequences (the paper; length-biased), ``dr_grpo`` divides the token sum by
   ``sequences × max_completion_length``, ``dapo`` (default, as in TRL) divides by the number of
   completion tokens in the batch. The normaliser is fixed over the whole batch, so gradient
   accumulation over micro-batches gives exactly the full-batch gradient.
4. **KL is off by default** (``beta = 0``, as TRL and DAPO); when on, it is the paper's k3
   estimator ``exp(r − l) − (r − l) − 1`` against a frozen copy of the starting model.
5. **Asymmetric clipping** is available (``epsilon_high``, DAPO's clip-higher).
6. **Zero-advantage rollouts are not back-propagated** when ``beta = 0``: their loss and gradient
   are exactly 0, so skipping them changes no number and saves the backward pass that the
   allocator's uninformative groups would cost. They still count in the normalisers.
7. **One generation per step feeds ``num_iterations`` updates** (μ in the paper, default 1); with
   μ = 1 the old log-probs are the detached current ones, so the ratio is 1 and the update is the
   plain policy gradient with clipping inactive, as in TRL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, get_args

import numpy as np
from numpy.typing import NDArray

from trainers.grpo.config import STD_EPS, LossType, ScaleRewards

if TYPE_CHECKING:
    import torch

__all__ = [
    "ScaleRewards",
    "clipped_surrogate",
    "expand_groups",
    "group_advantages",
    "kl_k3",
    "per_token_logps",
    "token_entropy",
    "token_weights",
]

ArrayT = TypeVar("ArrayT", "NDArray[Any]", "torch.Tensor")


def group_advantages(rewards: ArrayT, group_ids: Any, *, scale: ScaleRewards = "group") -> ArrayT:
    """Advantages of ragged groups: reward minus its group's mean, scaled by ``scale``.

    ``rewards`` is a 1-D numpy array or torch tensor; ``group_ids`` (same length, any hashable
    integer labels) says which group each reward belongs to. ``scale``: ``"group"`` divides by
    the group's unbiased std + 1e-4, ``"batch"`` by the std of all rewards + 1e-4 (TRL's
    meaning), ``"none"`` by nothing. Groups of size 1 and zero-variance groups get exactly 0.
    The result has the input's type, dtype and device.
    """
    if scale not in get_args(ScaleRewards):
        raise ValueError(f"scale must be one of {list(get_args(ScaleRewards))}, got {scale!r}")
    is_torch = type(rewards).__module__.startswith("torch")
    src: Any = rewards
    r = np.asarray(src.detach().cpu() if is_torch else src, dtype=np.float64)
    g = np.asarray(group_ids.detach().cpu() if hasattr(group_ids, "detach") else group_ids)
    if r.ndim != 1 or g.shape != r.shape:
        raise ValueError(
            f"rewards and group_ids must be 1-D of the same length, got shapes {r.shape} and "
            f"{g.shape}"
        )
    if not np.all(np.isfinite(r)):
        raise ValueError("rewards contain NaN or inf: every reward must be a finite number")
    adv = np.zeros_like(r)
    if r.size:
        _, inv = np.unique(g, return_inverse=True)
        inv = inv.reshape(-1)
        size = np.bincount(inv).astype(np.float64)  # [groups]
        mean = np.bincount(inv, weights=r) / size  # [groups]
        centred = r - mean[inv]  # [n]
        sq = np.bincount(inv, weights=centred**2)  # [groups]
        flat = (size < 2) | (sq <= 1e-12 * np.maximum(1.0, size))  # size 1 or zero variance
        centred[flat[inv]] = 0.0
        if scale == "group":
            std = np.sqrt(sq / np.maximum(size - 1, 1))  # unbiased, [groups]
            adv = centred / (std[inv] + STD_EPS)
        elif scale == "batch":
            std_all = float(np.std(r, ddof=1)) if r.size > 1 else 0.0
            adv = centred / (std_all + STD_EPS)
        else:
            adv = centred
    if is_torch:
        import torch

        out: Any = torch.as_tensor(adv, dtype=src.dtype, device=src.device)
        return out  # type: ignore[no-any-return]
    result: Any = adv.astype(np.result_type(np.asarray(src).dtype, np.float32))
    return result  # type: ignore[no-any-return]


def expand_groups(counts: Any) -> NDArray[np.int64]:
    """Group id of each rollout when question ``i`` got ``counts[i]`` of them: ``[0,0,1,2,2,2]``
    for counts ``[2, 1, 3]``. Zero counts give no rows."""
    c = np.asarray(counts, dtype=np.int64)
    if c.ndim != 1 or np.any(c < 0):
        raise ValueError(f"counts must be a 1-D array of integers >= 0, got {c.tolist()}")
    return np.repeat(np.arange(c.size, dtype=np.int64), c)


def per_token_logps(
    logits: torch.Tensor, tokens: torch.Tensor, *, temperature: float = 1.0
) -> torch.Tensor:
    """Log-probabilities of ``tokens`` under ``logits / temperature``.

    ``logits``: ``[N, T, V]`` predicting ``tokens``: ``[N, T]`` (already shifted). A temperature of
    0 (greedy) is read as 1.
    """
    import torch

    t = temperature if temperature > 0 else 1.0
    scaled = logits.float() / t  # [N, T, V]
    logz = torch.logsumexp(scaled, dim=-1)  # [N, T]
    picked = torch.gather(scaled, -1, tokens.unsqueeze(-1)).squeeze(-1)  # [N, T]
    return picked - logz  # [N, T]


def token_entropy(logits: torch.Tensor, *, temperature: float = 1.0) -> torch.Tensor:
    """Entropy of the sampling distribution at each position: ``[N, T, V] -> [N, T]``."""
    import torch

    t = temperature if temperature > 0 else 1.0
    logp = torch.log_softmax(logits.float() / t, dim=-1)  # [N, T, V]
    return -(logp.exp() * logp).sum(-1)  # [N, T]


def clipped_surrogate(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    advantages: torch.Tensor,
    *,
    epsilon: float,
    epsilon_high: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO-clip per-token loss ``-min(ρA, clip(ρ, 1−ε, 1+ε_high)A)`` with ``ρ = exp(l − l_old)``.

    ``logps``, ``old_logps``: ``[N, T]``; ``advantages``: ``[N]``. Returns the loss ``[N, T]`` and
    two ``[N, T]`` booleans: where the lower and where the upper clip was active.
    """
    import torch

    hi = epsilon if epsilon_high is None else epsilon_high
    ratio = torch.exp(logps - old_logps)  # [N, T]
    adv = advantages.unsqueeze(-1)  # [N, 1]
    clipped = torch.clamp(ratio, 1.0 - epsilon, 1.0 + hi)  # [N, T]
    loss = -torch.min(ratio * adv, clipped * adv)  # [N, T]
    low = (ratio < 1.0 - epsilon) & (adv < 0)  # [N, T]
    high = (ratio > 1.0 + hi) & (adv > 0)  # [N, T]
    return loss, low, high


def kl_k3(logps: torch.Tensor, ref_logps: torch.Tensor) -> torch.Tensor:
    """The k3 estimator of KL(π‖π_ref) per token: ``exp(r − l) − (r − l) − 1`` (``[N, T]``)."""
    import torch

    d = ref_logps - logps  # [N, T]
    return torch.exp(d) - d - 1.0  # [N, T]


def token_weights(
    mask: torch.Tensor, *, loss_type: LossType, max_completion_length: int
) -> torch.Tensor:
    """Per-token weights whose weighted sum of per-token losses is the batch loss.

    ``mask``: ``[N, T]`` (1 on completion tokens) for the **whole** batch, so micro-batches
    summed give the full-batch loss. ``grpo``: ``1 / (N · len_i)``; ``dr_grpo``:
    ``1 / (N · max_completion_length)``; ``dapo``: ``1 / Σ mask``.
    """
    m = mask.float()  # [N, T]
    n = max(int(m.shape[0]), 1)
    if loss_type == "grpo":
        lengths = m.sum(-1, keepdim=True).clamp(min=1.0)  # [N, 1]
        return m / (lengths * n)  # [N, T]
    if loss_type == "dr_grpo":
        return m / float(n * max_completion_length)  # [N, T]
    if loss_type == "dapo":
        return m / m.sum().clamp(min=1.0)  # [N, T]
    raise ValueError(f"loss_type must be one of {list(get_args(LossType))}, got {loss_type!r}")
