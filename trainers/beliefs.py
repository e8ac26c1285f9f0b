"""Per-prompt Beta beliefs across training steps, with forgetting.

The policy changes while it trains, so old outcomes say less about today's pass rate than new
ones. The store keeps, for each prompt id, its discounted evidence ``(a, b)`` — successes and
failures, each multiplied by ``decay`` per training step since they were seen — and gives the next
batch the prior ``Beta(α₀ + a·decay^Δ, β₀ + b·decay^Δ)``, where ``(α₀, β₀)`` is the base prior of
every prompt: the configured one (``"fixed"``), or a Beta fitted by moments to the posterior means
of the prompts seen so far (``"fitted"``, empirical Bayes; used once ``min_fit`` prompts are
known). The store is plain numbers: it goes into checkpoints as a dict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from adaroll_env.model import PRIOR_MAX
from adaroll_env.priors import EmpiricalPassRates, fit_beta

BasePrior = Literal["fixed", "fitted"]


def posterior_mean(alpha: Any, beta: Any, successes: Any, failures: Any) -> Any:
    """Posterior mean pass rate ``(α + s) / (α + β + s + f)`` of a ``Beta(α, β)`` prior after
    ``s`` successes and ``f`` failures (arrays broadcast); no evidence gives the prior mean.

    The one place the trainers layer computes it (``adaroll_env.model`` holds the model's own).

    >>> float(posterior_mean(1.0, 1.0, 0.0, 0.0)), float(posterior_mean(1.0, 1.0, 3.0, 1.0))
    (0.5, 0.6666666666666666)
    """
    return (alpha + successes) / (alpha + beta + successes + failures)


class BeliefStore:
    """Discounted Beta evidence per prompt id; see the module docstring.

    >>> store = BeliefStore(decay=0.5)
    >>> store.update([7], successes=[4], failures=[0], step=0)
    >>> store.prior([7, 8], step=1)
    (array([3., 1.]), array([1., 1.]))
    """

    def __init__(
        self,
        prior_alpha: float = 1.0,
        prior_beta: float = 1.0,
        *,
        decay: float = 0.95,
        base: BasePrior = "fixed",
        min_fit: int = 20,
    ) -> None:
        if not (0.0 < decay <= 1.0):
            raise ValueError(f"decay must be in (0, 1], got {decay!r}")
        if not (prior_alpha > 0 and prior_beta > 0):
            raise ValueError(
                f"prior_alpha and prior_beta must be > 0, got {prior_alpha!r}, {prior_beta!r}"
            )
        if base not in ("fixed", "fitted"):
            raise ValueError(f"base must be 'fixed' or 'fitted', got {base!r}")
        self.prior_alpha = float(prior_alpha)
        self.prior_beta = float(prior_beta)
        self.decay = float(decay)
        self.base = base
        self.min_fit = int(min_fit)
        self._a: dict[int, float] = {}
        self._b: dict[int, float] = {}
        self._seen: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._seen)

    def __contains__(self, prompt_id: object) -> bool:
        return prompt_id in self._seen

    def _evidence(self, prompt_id: int, step: int) -> tuple[float, float]:
        if prompt_id not in self._seen:
            return 0.0, 0.0
        w = self.decay ** max(step - self._seen[prompt_id], 0)
        return self._a[prompt_id] * w, self._b[prompt_id] * w

    def base_prior(self) -> tuple[float, float]:
        """The prior of a prompt never seen: fixed, or fitted to the store (``base="fitted"``)."""
        if self.base == "fitted" and len(self) >= self.min_fit:
            return fit_beta(EmpiricalPassRates(tuple(self.posterior_means())))
        return self.prior_alpha, self.prior_beta

    def prior(
        self, prompt_ids: Sequence[int], step: int
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The Beta prior ``(alpha[B], beta[B])`` of each prompt at training step ``step``."""
        a0, b0 = self.base_prior()
        ev = [self._evidence(int(i), step) for i in prompt_ids]
        alpha = np.array([a0 + a for a, _ in ev], dtype=np.float64)
        beta = np.array([b0 + b for _, b in ev], dtype=np.float64)
        return np.minimum(alpha, PRIOR_MAX), np.minimum(beta, PRIOR_MAX)

    def update(
        self, prompt_ids: Sequence[int], successes: ArrayLike, failures: ArrayLike, step: int
    ) -> None:
        """Add the step's outcomes: the old evidence decays to ``step``, then the counts add."""
        s = np.asarray(successes, dtype=np.float64).reshape(-1)
        f = np.asarray(failures, dtype=np.float64).reshape(-1)
        if s.shape != (len(prompt_ids),) or f.shape != s.shape:
            raise ValueError(
                f"successes {s.shape} and failures {f.shape} must have one entry per prompt "
                f"({len(prompt_ids)})"
            )
        if np.any(s < 0) or np.any(f < 0):
            raise ValueError("successes and failures must be >= 0")
        for i, pid in enumerate(prompt_ids):
            pid = int(pid)
            if s[i] + f[i] == 0 and pid not in self._seen:
                continue
            a, b = self._evidence(pid, step)
            self._a[pid] = a + float(s[i])
            self._b[pid] = b + float(f[i])
            self._seen[pid] = int(step)

    def posterior_means(self, step: int | None = None) -> NDArray[np.float64]:
        """Posterior mean pass rate of every prompt in the store (fixed base prior)."""
        ids = list(self._seen)
        if not ids:
            return np.zeros(0)
        ev = np.array(
            [self._evidence(i, self._seen[i] if step is None else step) for i in ids]
        )  # [n, 2]
        return posterior_mean(self.prior_alpha, self.prior_beta, ev[:, 0], ev[:, 1])

    def observed_rates(self) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Prompt ids and their observed (discounted) success fractions, for calibration plots;
        a prompt with no evidence left reads the prior mean (``posterior_mean`` of nothing)."""
        ids = np.array(list(self._seen), dtype=np.int64)
        a = np.array([self._a[int(i)] for i in ids], dtype=np.float64)
        b = np.array([self._b[int(i)] for i in ids], dtype=np.float64)
        prior = posterior_mean(self.prior_alpha, self.prior_beta, 0.0, 0.0)
        rates = np.full(a.shape, prior, dtype=np.float64)
        seen = a + b > 0
        rates[seen] = a[seen] / (a[seen] + b[seen])
        return ids, rates

    def state_dict(self) -> dict[str, Any]:
        """Everything the store holds, as plain lists (goes into checkpoints)."""
        ids = list(self._seen)
        return {
            "prior_alpha": self.prior_alpha,
            "prior_beta": self.prior_beta,
            "decay": self.decay,
            "base": self.base,
            "min_fit": self.min_fit,
            "ids": ids,
            "a": [self._a[i] for i in ids],
            "b": [self._b[i] for i in ids],
            "seen": [self._seen[i] for i in ids],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""
        self.prior_alpha = float(state["prior_alpha"])
        self.prior_beta = float(state["prior_beta"])
        self.decay = float(state["decay"])
        self.base = state["base"]
        self.min_fit = int(state["min_fit"])
        ids = [int(i) for i in state["ids"]]
        self._a = dict(zip(ids, map(float, state["a"]), strict=True))
        self._b = dict(zip(ids, map(float, state["b"]), strict=True))
        self._seen = dict(zip(ids, map(int, state["seen"]), strict=True))
