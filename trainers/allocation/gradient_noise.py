"""The gradient-noise ratio κ of ``snr(κ)``, measured on the policy's last layer during updates.

``snr(κ)`` (``adaroll_env.utilities``) models one GRPO step: a mixed group of n rollouts adds
n − 1 degrees of freedom of signal, the prompts' mean directions spread with variance σ_b²
(between-prompt noise, growing with Σ(n_i − 1)²) and every rollout adds sampling noise σ_w²
(growing with Σ n_i); κ = σ_w² / σ_b². This module measures both on real rollouts.

Per rollout j of prompt i, the policy-gradient term of the loss is g_ij = A_ij·∇ log π(y_ij)
(the clipped ratio is 1 at the first iteration). We take its part in the output layer W (logits
= W·h / T): ∇_W log π(y) = Σ_t (e_{y_t} − p_t)·h_tᵀ / T, a V × d matrix, and read it through
``dim`` random bilinear forms z_k = r_kᵀ G c_k (Gaussian r_k ∈ R^V, c_k ∈ R^d, fixed for the
run), so that E‖z‖² ∝ ‖G‖²_F and inner products are preserved in expectation: per token,
(R[y_t] − p_t·R) ⊙ (h_t·C), summed over the completion. No extra forward or backward pass:
the update's own forward gives the hidden states and logits.

From the projected g_ij of the prompts with at least two gradient rollouts::

  σ_w² = mean_i  Σ_j ‖g_ij − ḡ_i‖² / (n_i − 1)          (within-prompt, unbiased)
  σ_b² = Σ_i ‖ḡ_i − ḡ‖² / (k − 1) − mean_i σ_wi² / n_i   (between-prompt, sampling noise of
                                                           the means removed)
  κ = σ_w² / σ_b²   (inf when σ_b² <= 0: the spread is all sampling noise).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike

__all__ = ["AUTO_UTILITY", "AutoKappa", "NoiseCollector", "Projection", "noise_ratio"]

#: the utility name that asks for snr(κ) with κ measured in training (``AutoKappa``)
AUTO_UTILITY = "snr(auto)"


class Projection:
    """Random bilinear forms of the output layer's per-rollout gradient (fixed per run)."""

    def __init__(self, vocab: int, hidden: int, dim: int = 64, seed: int = 0) -> None:
        gen = torch.Generator().manual_seed(int(seed))
        self.vocab, self.hidden, self.dim = int(vocab), int(hidden), int(dim)
        self.r = torch.randn(self.vocab, self.dim, generator=gen) / math.sqrt(self.dim)  # [V, k]
        self.c = torch.randn(self.hidden, self.dim, generator=gen)  # [d, k]

    @torch.no_grad()
    def rollouts(
        self,
        hidden: torch.Tensor,
        logits: torch.Tensor,
        targets: torch.Tensor,
        mask: torch.Tensor,
        temperature: float,
    ) -> torch.Tensor:
        """z ``[b, dim]`` of ∇_W log π(completion) for each row.

        ``hidden`` ``[b, T, d]`` and ``logits`` ``[b, T, V]`` at the positions that predict the
        completion tokens ``targets`` ``[b, T]``; ``mask`` ``[b, T]`` marks real tokens.
        """
        r = self.r.to(logits.device)
        c = self.c.to(hidden.device)
        p = torch.softmax(logits.float() / temperature, dim=-1)  # [b, T, V]
        u = r[targets] - p @ r  # [b, T, k]
        h = hidden.float() @ c  # [b, T, k]
        return ((u * h) * mask.float()[..., None]).sum(dim=1) / temperature  # [b, k]


def noise_ratio(g: ArrayLike, groups: ArrayLike) -> dict[str, float]:
    """σ_w², σ_b² and κ = σ_w²/σ_b² from per-rollout gradients ``g`` ``[M, k]`` and their prompt
    ids ``groups`` ``[M]`` (see the module docstring); NaN where fewer than two prompts have two
    rollouts or more.

    >>> rng = np.random.default_rng(0)
    >>> mu = rng.normal(0, 1.0, (400, 16))              # σ_b² = 16 (per dimension 1)
    >>> g = np.repeat(mu, 8, 0) + rng.normal(0, 2.0, (3200, 16))  # σ_w² = 64
    >>> round(noise_ratio(g, np.repeat(np.arange(400), 8))["kappa"])
    4
    """
    g = np.asarray(g, dtype=np.float64)
    ids = np.asarray(groups)
    nan = {"within": math.nan, "between": math.nan, "kappa": math.nan, "prompts": 0.0}
    if g.ndim != 2 or g.shape[0] != ids.shape[0]:
        raise ValueError(f"g must be [M, k] with one group id per row, got {g.shape}, {ids.shape}")
    uniq, inv, counts = np.unique(ids, return_inverse=True, return_counts=True)
    keep = counts >= 2
    if keep.sum() < 2:
        return nan
    sums = np.zeros((uniq.size, g.shape[1]))
    np.add.at(sums, inv, g)
    means = sums / counts[:, None]  # [P, k]
    dev = ((g - means[inv]) ** 2).sum(axis=1)  # [M]
    ss = np.bincount(inv, weights=dev, minlength=uniq.size)  # [P]
    n = counts[keep].astype(np.float64)
    within_i = ss[keep] / (n - 1.0)  # [P']
    m = means[keep]
    spread = float(((m - m.mean(axis=0)) ** 2).sum(axis=1).sum() / (m.shape[0] - 1))
    within = float(within_i.mean())
    between = spread - float((within_i / n).mean())
    kappa = within / between if between > 0 else math.inf
    return {"within": within, "between": between, "kappa": kappa, "prompts": float(keep.sum())}


class NoiseCollector:
    """Gathers the projected per-rollout gradients g_ij = A_ij·z_ij of one update's first
    iteration (``add`` per micro-batch) and gives the step's ``noise_ratio`` (``result``)."""

    def __init__(self, projection: Projection, temperature: float) -> None:
        self.projection = projection  # fixed per run: the trainer's ``noise_projection``
        self.temperature = float(temperature)
        self.rows: list[np.ndarray] = []
        self.grads: list[np.ndarray] = []

    def add(
        self,
        rows: ArrayLike,
        hidden: torch.Tensor,
        logits: torch.Tensor,
        targets: torch.Tensor,
        mask: torch.Tensor,
        advantages: torch.Tensor,
    ) -> None:
        """One micro-batch: rows of the update batch, their completion hidden states
        ``[b, T, d]``, logits ``[b, T, V]``, targets and mask ``[b, T]``, advantages ``[b]``."""
        z = self.projection.rollouts(hidden, logits, targets, mask, self.temperature)  # [b, k]
        g = z * advantages.detach().float().to(z.device)[:, None]  # [b, k]
        self.rows.append(np.asarray(rows, dtype=np.int64))
        self.grads.append(g.cpu().numpy().astype(np.float64))

    def result(self, groups: ArrayLike) -> dict[str, float]:
        """``noise_ratio`` of everything added; ``groups[row]`` is each row's prompt."""
        if not self.rows:
            return noise_ratio(np.zeros((0, 1)), np.zeros(0))
        rows = np.concatenate(self.rows)
        return noise_ratio(np.concatenate(self.grads), np.asarray(groups)[rows])


class AutoKappa:
    """κ for ``utility="snr(auto)"``: ``snr(κ)`` with κ the run's own measured noise ratio.

    Starts at ``start`` (8, the simulator's choice) until ``window`` measurements exist, then
    follows the median of the last ``window`` finite measurements, snapped to a grid of
    ``per_decade`` points a decade (1, 1.78, 3.16, 5.62, 10, ...; clipped to [``low``,
    ``high``]) so that the allocator's index tables (cached per utility name) change only when
    the estimate moves by a grid step, not with every noisy measurement.
    """

    def __init__(
        self,
        start: float = 8.0,
        *,
        window: int = 5,
        per_decade: int = 4,
        low: float = 0.1,
        high: float = 1000.0,
    ) -> None:
        self.kappa = float(start)
        self.window = int(window)
        self.per_decade = int(per_decade)
        self.low, self.high = float(low), float(high)
        self.measured: list[float] = []

    @property
    def utility(self) -> str:
        """The utility name in force: ``snr(<κ>)``."""
        return f"snr({self.kappa:.4g})"

    def update(self, kappa: float) -> bool:
        """Add one measurement (NaN ignored, inf clipped to ``high``); True if κ moved."""
        if math.isnan(kappa):
            return False
        self.measured = [*self.measured, min(float(kappa), self.high)][-self.window :]
        if len(self.measured) < self.window:
            return False
        med = float(np.median(self.measured))
        snapped = 10.0 ** (round(self.per_decade * math.log10(max(med, 1e-12))) / self.per_decade)
        new = float(f"{min(max(snapped, self.low), self.high):.4g}")
        moved = new != self.kappa
        self.kappa = new
        return moved

    def state_dict(self) -> dict[str, Any]:
        """For checkpoints."""
        return {"kappa": self.kappa, "measured": list(self.measured)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""
        self.kappa = float(state["kappa"])
        self.measured = [float(x) for x in state["measured"]]
