"""Per-prompt Beta beliefs across training steps, with forgetting and grouped empirical Bayes.

The policy changes while it trains, so old outcomes say less about today's pass rate than new
ones. The store keeps, for each prompt id, its discounted evidence ``(a, b)`` — successes and
failures, each multiplied by ``decay`` per training step since they were seen — and gives the next
batch the prior ``Beta(α₀ + a·decay^Δ, β₀ + b·decay^Δ)``. ``(α₀, β₀)`` is the base prior of a
prompt before its own evidence:

* ``"fixed"``: the configured ``(prior_alpha, prior_beta)``;
* ``"fitted"`` (empirical Bayes): the Beta maximising the Beta-binomial marginal likelihood of the
  store's discounted counts (``adaroll_env.priors.fit_beta_binomial``), once ``min_fit`` prompts
  have evidence. With **groups** (a key per prompt, e.g. the task's difficulty ``level`` or a
  jsonl column), each group with ``min_fit`` prompts of evidence gets its own fitted Beta and
  smaller groups share the fit of the whole store; a prompt's own evidence then goes on top, so a
  new prompt starts from what its group's prompts say and a revisited one from its own history.

How old evidence enters a fit (``fit``):

* ``"weighted"`` (the default): each prompt's counts as they were observed at its last visit
  (a prompt seen again carries its earlier visits discounted to that one), the prompt
  *weighted* by ``decay`` to the power of its age since: old prompts say less about today's
  population of pass rates, but their rollouts keep what they say about its spread. On a
  population that does not move it recovers the Beta the pass rates were drawn from.
* ``"discounted"`` (the rule before 2026-12-06): each prompt's discounted counts, read as if
  they were observations. Discounting shrinks a prompt's 8 rollouts seen 20 steps ago to 2.9
  "rollouts", and a handful of rollouts cannot show how far pass rates spread, so the fit leans
  toward a concentrated Beta; when a group has only a few recent prompts (an allocator that
  rarely samples it) the fit can run to its bound: Beta(331, 9979), "every prompt of the group
  passes 3.2 % of the time, certainly".

Fits are refreshed every ``refit_every`` steps (a fit is tens of milliseconds on ten thousand
prompts, and every new prior changes ``bamdp``'s tables) and rounded to 2 % in log space, so
that a refit which barely moves the estimate does not make allocators rebuild tables.

Each ``update`` also scores how well the priors the store gave predicted the outcomes that came
(per-rollout Brier score and log-loss of the prior mean, ``calibration()``), beside what the
``fixed`` base prior and the ungrouped fit would have predicted for the same rollouts. The store
is plain numbers: it goes into checkpoints as a dict.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from adaroll_env.model import PRIOR_MAX, posterior_mean
from adaroll_env.priors import fit_beta_binomial

BasePrior = Literal["fixed", "fitted"]
FitEvidence = Literal["discounted", "weighted"]

#: Fitted priors are rounded to this relative step in log space (2 %).
FIT_ROUNDING = 0.02
#: Prompts with less discounted evidence than this (in rollouts) are left out of a fit.
FIT_MIN_EVIDENCE = 0.01
#: The names of the priors ``calibration()`` compares.
SCORED = ("store", "fixed", "fitted")


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
        refit_every: int = 10,
        fit: FitEvidence = "weighted",
    ) -> None:
        if not (0.0 < decay <= 1.0):
            raise ValueError(f"decay must be in (0, 1], got {decay!r}")
        if not (prior_alpha > 0 and prior_beta > 0):
            raise ValueError(
                f"prior_alpha and prior_beta must be > 0, got {prior_alpha!r}, {prior_beta!r}"
            )
        if base not in ("fixed", "fitted"):
            raise ValueError(f"base must be 'fixed' or 'fitted', got {base!r}")
        if fit not in ("discounted", "weighted"):
            raise ValueError(
                f"fit must be 'discounted' or 'weighted' (how old evidence enters a fitted "
                f"prior), got {fit!r}"
            )
        if int(min_fit) < 2:
            raise ValueError(f"min_fit must be >= 2 (a fit needs two prompts), got {min_fit!r}")
        if int(refit_every) < 1:
            raise ValueError(f"refit_every must be >= 1 step, got {refit_every!r}")
        self.prior_alpha = float(prior_alpha)
        self.prior_beta = float(prior_beta)
        self.decay = float(decay)
        self.base = base
        self.min_fit = int(min_fit)
        self.refit_every = int(refit_every)
        self.fit: FitEvidence = fit
        self._a: dict[int, float] = {}
        self._b: dict[int, float] = {}
        self._seen: dict[int, int] = {}
        self._group: dict[int, Hashable] = {}
        # Fitted base priors: key None = the whole store; refreshed at ``_fit_step`` + refit_every.
        self._fits: dict[Hashable | None, tuple[float, float]] = {}
        self._fit_step: int | None = None
        # Running [Brier sum, log-loss sum, rollouts] of each scored prior.
        self._scores: dict[str, list[float]] = {k: [0.0, 0.0, 0.0] for k in SCORED}

    def __len__(self) -> int:
        return len(self._seen)

    def __contains__(self, prompt_id: object) -> bool:
        return prompt_id in self._seen

    def _evidence(self, prompt_id: int, step: int) -> tuple[float, float]:
        if prompt_id not in self._seen:
            return 0.0, 0.0
        w = self.decay ** max(step - self._seen[prompt_id], 0)
        return self._a[prompt_id] * w, self._b[prompt_id] * w

    # --- base priors ----------------------------------------------------------------------------
    def _refit(self, step: int) -> None:
        """Refit the whole-store and per-group Betas from the evidence discounted to ``step``.

        Prompts whose discounted evidence is below ``FIT_MIN_EVIDENCE`` rollouts (seen long ago)
        carry no information a 2 % rounding could show and are left out of the fit, and each
        fit starts from the previous one: a refit costs milliseconds, not tens of them.
        """
        previous = self._fits
        self._fits = {}
        self._fit_step = step
        ids = list(self._seen)
        if len(ids) < self.min_fit:
            return
        n = len(ids)
        # the three dicts gain their keys together (update, load_state_dict) and never lose
        # one, so their values line up with ``ids``
        a = np.fromiter(self._a.values(), dtype=np.float64, count=n)
        b = np.fromiter(self._b.values(), dtype=np.float64, count=n)
        age = step - np.fromiter(self._seen.values(), dtype=np.float64, count=n)
        w = self.decay ** np.maximum(age, 0.0)
        ev = np.stack([a * w, b * w], axis=1)  # [n, 2], as _evidence gives them
        live = ev.sum(axis=1) >= FIT_MIN_EVIDENCE
        if np.count_nonzero(live) < self.min_fit:
            live = ev.sum(axis=1) > 0
        if np.count_nonzero(live) < 2:
            return
        if self.fit == "weighted":  # counts as observed, each prompt weighted by its age
            counts, weight = np.stack([a, b], axis=1), w
        else:  # discounted counts read as observations
            counts, weight = ev, np.ones(n)

        def fit(rows: Any, key: Hashable | None) -> tuple[float, float]:
            c = counts[rows]
            return _rounded(
                fit_beta_binomial(c[:, 0], c[:, 1], weights=weight[rows], start=previous.get(key))
            )

        self._fits[None] = fit(live, None)
        groups: dict[Hashable, list[int]] = {}
        for row in np.flatnonzero(live).tolist():
            pid = ids[row]
            if pid in self._group:
                groups.setdefault(self._group[pid], []).append(row)
        for key, rows in groups.items():
            if len(rows) >= self.min_fit:
                self._fits[key] = fit(rows, key)

    def _maybe_refit(self, step: int) -> None:
        if self.base != "fitted":
            return
        if (
            self._fit_step is None
            or step - self._fit_step >= self.refit_every
            or (not self._fits and len(self) >= self.min_fit)
        ):
            self._refit(step)

    def base_prior(self, group: Hashable | None = None) -> tuple[float, float]:
        """The prior of a prompt never seen (in ``group``): fixed, or fitted (``base="fitted"``).

        A group with fewer than ``min_fit`` prompts of evidence gets the whole store's fit; a
        store with fewer than ``min_fit`` prompts gets the fixed prior.
        """
        if self.base == "fitted":
            if group is not None and group in self._fits:
                return self._fits[group]
            if None in self._fits:
                return self._fits[None]
        return self.prior_alpha, self.prior_beta

    def group_priors(self) -> dict[str, tuple[float, float]]:
        """The fitted Beta of every group that has its own (key ``"*"``: the whole store)."""
        return {("*" if k is None else str(k)): v for k, v in self._fits.items()}

    def prior(
        self,
        prompt_ids: Sequence[int],
        step: int,
        groups: Sequence[Hashable] | None = None,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The Beta prior ``(alpha[B], beta[B])`` of each prompt at training step ``step``.

        ``groups`` (one key per prompt) picks each prompt's group prior; without it a prompt's
        recorded group (from ``update``) is used.
        """
        self._maybe_refit(step)
        return self._prior(prompt_ids, step, groups)

    def _prior(
        self, prompt_ids: Sequence[int], step: int, groups: Sequence[Hashable] | None
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        alpha = np.empty(len(prompt_ids), dtype=np.float64)
        beta = np.empty(len(prompt_ids), dtype=np.float64)
        for j, pid in enumerate(prompt_ids):
            pid = int(pid)
            key = groups[j] if groups is not None else self._group.get(pid)
            a0, b0 = self.base_prior(key)
            a, b = self._evidence(pid, step)
            alpha[j], beta[j] = a0 + a, b0 + b
        return np.minimum(alpha, PRIOR_MAX), np.minimum(beta, PRIOR_MAX)

    # --- evidence -------------------------------------------------------------------------------
    def update(
        self,
        prompt_ids: Sequence[int],
        successes: ArrayLike,
        failures: ArrayLike,
        step: int,
        groups: Sequence[Hashable] | None = None,
    ) -> None:
        """Add the step's outcomes: the old evidence decays to ``step``, then the counts add.

        Before adding, the outcomes are scored against the priors the store gives for these
        prompts (and against the fixed and the ungrouped fitted base, for ``calibration()``).
        """
        s = np.asarray(successes, dtype=np.float64).reshape(-1)
        f = np.asarray(failures, dtype=np.float64).reshape(-1)
        if s.shape != (len(prompt_ids),) or f.shape != s.shape:
            raise ValueError(
                f"successes {s.shape} and failures {f.shape} must have one entry per prompt "
                f"({len(prompt_ids)})"
            )
        if groups is not None and len(groups) != len(prompt_ids):
            raise ValueError(
                f"groups has {len(groups)} keys for {len(prompt_ids)} prompts: give one per prompt"
            )
        if np.any(s < 0) or np.any(f < 0):
            raise ValueError("successes and failures must be >= 0")
        if groups is not None:
            for pid, key in zip(prompt_ids, groups, strict=True):
                self._group[int(pid)] = key
        self._score(prompt_ids, s, f, step)
        for i, pid in enumerate(prompt_ids):
            pid = int(pid)
            if s[i] + f[i] == 0 and pid not in self._seen:
                continue
            a, b = self._evidence(pid, step)
            self._a[pid] = a + float(s[i])
            self._b[pid] = b + float(f[i])
            self._seen[pid] = int(step)
        self._maybe_refit(step)

    def _score(
        self, prompt_ids: Sequence[int], s: NDArray[np.float64], f: NDArray[np.float64], step: int
    ) -> None:
        if not np.any(s + f > 0):
            return
        ev = np.array([self._evidence(int(i), step) for i in prompt_ids]).reshape(-1, 2)  # [B, 2]
        pa, pb = self._prior(prompt_ids, step, None)
        fitted = self._fits.get(None, (self.prior_alpha, self.prior_beta))
        bases = {
            "store": (pa, pb),
            "fixed": (self.prior_alpha + ev[:, 0], self.prior_beta + ev[:, 1]),
            "fitted": (fitted[0] + ev[:, 0], fitted[1] + ev[:, 1]),
        }
        for name, (a, b) in bases.items():
            m = np.clip(posterior_mean(a, b), 1e-6, 1 - 1e-6)  # [B]
            acc = self._scores[name]
            acc[0] += float(np.sum(s * (1 - m) ** 2 + f * m**2))
            acc[1] += float(-np.sum(s * np.log(m) + f * np.log1p(-m)))
            acc[2] += float(np.sum(s + f))

    def calibration(self) -> dict[str, dict[str, float]]:
        """Per-rollout Brier score and log-loss of the prior mean, for each scored prior.

        ``store``: the priors this store gave; ``fixed``: the configured base prior plus each
        prompt's evidence; ``fitted``: the whole-store fit plus evidence (no groups). Lower is
        better; NaN before any rollout was scored.
        """
        out = {}
        for name, (brier, loss, n) in self._scores.items():
            out[name] = {
                "brier": brier / n if n else math.nan,
                "log_loss": loss / n if n else math.nan,
                "rollouts": n,
            }
        return out

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

    # --- checkpoints ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything the store holds, as plain lists (goes into checkpoints)."""
        ids = list(self._seen)
        return {
            "prior_alpha": self.prior_alpha,
            "prior_beta": self.prior_beta,
            "decay": self.decay,
            "base": self.base,
            "min_fit": self.min_fit,
            "refit_every": self.refit_every,
            "fit": self.fit,
            "ids": ids,
            "a": [self._a[i] for i in ids],
            "b": [self._b[i] for i in ids],
            "seen": [self._seen[i] for i in ids],
            "groups": [[i, g] for i, g in self._group.items()],
            "fits": [[k, list(v)] for k, v in self._fits.items()],
            "fit_step": self._fit_step,
            "scores": {k: list(v) for k, v in self._scores.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned (stores saved before groups load too)."""
        self.prior_alpha = float(state["prior_alpha"])
        self.prior_beta = float(state["prior_beta"])
        self.decay = float(state["decay"])
        self.base = state["base"]
        self.min_fit = int(state["min_fit"])
        self.refit_every = int(state.get("refit_every", self.refit_every))
        self.fit = state.get("fit", "discounted")  # stores saved before the option: discounted
        ids = [int(i) for i in state["ids"]]
        self._a = dict(zip(ids, map(float, state["a"]), strict=True))
        self._b = dict(zip(ids, map(float, state["b"]), strict=True))
        self._seen = dict(zip(ids, map(int, state["seen"]), strict=True))
        self._group = {int(i): _key(g) for i, g in state.get("groups", [])}
        self._fits = {_key(k): (float(v[0]), float(v[1])) for k, v in state.get("fits", [])}
        self._fit_step = state.get("fit_step")
        scores = state.get("scores", {})
        self._scores = {k: [float(x) for x in scores.get(k, [0.0, 0.0, 0.0])] for k in SCORED}


def _rounded(ab: tuple[float, float]) -> tuple[float, float]:
    """Round a fitted (a, b) to ``FIT_ROUNDING`` in log space, so tiny refits change nothing."""
    step = math.log1p(FIT_ROUNDING)
    return tuple(  # type: ignore[return-value]
        float(math.exp(round(math.log(x) / step) * step)) for x in ab
    )


def _key(value: Any) -> Hashable:
    """A group key back from JSON (lists become tuples)."""
    return tuple(value) if isinstance(value, list) else value
