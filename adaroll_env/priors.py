"""Difficulty profiles: the generative distribution of true pass rates, and the Beta fit to it.

A *difficulty* says how the simulator draws each question's hidden pass rate ``p``. It is a Beta
mixture (a single Beta is a one-component mixture) or an array of empirical pass rates, which
``sample`` draws from with replacement. ``fit_beta`` gives the Beta with the same mean and variance
(method of moments, exact for mixtures): the belief prior behind ``belief="matched"``.

Named profiles:

| name | distribution | mean | P(degenerate 8-group) |
|---|---|---|---|
| ``uniform`` | Beta(1, 1) | 0.50 | 0.22 |
| ``u-shaped`` | Beta(0.3, 0.3) | 0.50 | 0.53 |
| ``hard`` | Beta(1, 4) | 0.20 | 0.34 |
| ``easy`` | Beta(4, 1) | 0.80 | 0.34 |
| ``rlvr`` (default) | 0.25·Beta(0.5, 12) + 0.15·Beta(12, 0.5) + 0.60·Beta(1.5, 1.5) | 0.45 | 0.40 |

``rlvr`` is calibrated so that the exact probability that a uniform 8-rollout group is
all-correct or all-wrong is 0.40, as published RLVR runs report (35–45 % early in training): a
hard tail near p = 0 (slightly the larger, as curated RLVR sets are), a solved tail near p = 1
and a broad middle.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import betaln

from adaroll_env.errors import unknown_name


@dataclass(frozen=True)
class BetaMixture:
    """A mixture of Betas: ``components`` is a tuple of (weight, a, b); weights sum to 1."""

    components: tuple[tuple[float, float, float], ...]
    name: str = ""

    def __post_init__(self) -> None:
        comps = tuple(tuple(float(x) for x in c) for c in self.components)
        if not comps:
            raise ValueError("a Beta mixture needs at least one (weight, a, b) component")
        for c in comps:
            if len(c) != 3:
                raise ValueError(f"mixture component {c!r} must be (weight, a, b)")
            w, a, b = c
            if not (math.isfinite(w) and w > 0):
                raise ValueError(f"mixture weight {w!r} must be finite and > 0")
            if not (math.isfinite(a) and a > 0 and math.isfinite(b) and b > 0):
                raise ValueError(f"Beta({a!r}, {b!r}) in the mixture needs finite parameters > 0")
        total = sum(c[0] for c in comps)
        comps = tuple((w / total, a, b) for w, a, b in comps)
        if abs(total - 1.0) > 1e-6:
            warnings.warn(
                f"mixture weights sum to {total:g}, not 1: normalised to "
                f"{[round(c[0], 6) for c in comps]}; give weights that sum to 1 to silence this",
                UserWarning,
                stacklevel=3,
            )
        object.__setattr__(self, "components", comps)

    def sample(self, rng: np.random.Generator, size: int) -> NDArray[np.float64]:
        """Draw ``size`` pass rates."""
        w = np.array([c[0] for c in self.components])
        a = np.array([c[1] for c in self.components])
        b = np.array([c[2] for c in self.components])
        if len(w) == 1:
            return rng.beta(a[0], b[0], size=size)
        k = rng.choice(len(w), size=size, p=w)
        return rng.beta(a[k], b[k])

    def moment(self, order: int) -> float:
        """E[p^order]."""
        return float(
            sum(w * math.exp(betaln(a + order, b) - betaln(a, b)) for w, a, b in self.components)
        )

    def log_joint_moment(self, s: ArrayLike, f: ArrayLike) -> NDArray[np.float64]:
        """log E[p^s (1 − p)^f]: the log-probability of one particular outcome sequence with s
        successes and f failures when p is drawn from this difficulty (vectorised)."""
        s = np.asarray(s, dtype=np.float64)
        f = np.asarray(f, dtype=np.float64)
        terms = [math.log(w) + betaln(a + s, b + f) - betaln(a, b) for w, a, b in self.components]
        return np.asarray(np.logaddexp.reduce(np.stack(terms), axis=0), dtype=np.float64)

    def degenerate_probability(self, n: int) -> float:
        """Exact P(a group of n rollouts is all-correct or all-wrong) = E[p^n + (1 − p)^n]."""
        return float(
            sum(
                w
                * (
                    math.exp(betaln(a + n, b) - betaln(a, b))
                    + math.exp(betaln(a, b + n) - betaln(a, b))
                )
                for w, a, b in self.components
            )
        )

    def describe(self) -> str:
        """Readable form, e.g. ``0.25·Beta(0.5, 12) + 0.75·Beta(2, 2)``."""
        if len(self.components) == 1:
            _, a, b = self.components[0]
            return f"Beta({a:g}, {b:g})"
        return " + ".join(f"{w:.3g}·Beta({a:g}, {b:g})" for w, a, b in self.components)


@dataclass(frozen=True)
class EmpiricalPassRates:
    """Observed pass rates in [0, 1]; ``sample`` draws them with replacement."""

    rates: tuple[float, ...]
    name: str = ""

    def __post_init__(self) -> None:
        arr = np.asarray(self.rates, dtype=np.float64).reshape(-1)
        where = f" in {self.name}" if self.name else ""
        if arr.size == 0:
            raise ValueError(
                f"empirical pass rates{where} are empty: give at least one rate in [0, 1]"
            )
        bad = ~np.isfinite(arr) | (arr < 0) | (arr > 1)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"pass rate {float(arr[i])!r} (value {i + 1} of {arr.size}){where} is not in "
                f"[0, 1]: every pass rate must be a number from 0 to 1 ({int(bad.sum())} are not)"
            )
        object.__setattr__(self, "rates", tuple(float(x) for x in arr))

    def sample(self, rng: np.random.Generator, size: int) -> NDArray[np.float64]:
        """Draw ``size`` pass rates with replacement."""
        arr = np.asarray(self.rates)
        return arr[rng.integers(0, arr.size, size=size)]

    def moment(self, order: int) -> float:
        """E[p^order] over the empirical rates."""
        return float(np.mean(np.asarray(self.rates) ** order))

    def log_joint_moment(self, s: ArrayLike, f: ArrayLike) -> NDArray[np.float64]:
        """log E[p^s (1 − p)^f] over the empirical rates (vectorised; −inf where impossible)."""
        p = np.asarray(self.rates)
        s = np.asarray(s, dtype=np.float64)[..., None]
        f = np.asarray(f, dtype=np.float64)[..., None]
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(s > 0, s * np.log(p), 0.0) + np.where(f > 0, f * np.log1p(-p), 0.0)
        return np.asarray(np.logaddexp.reduce(terms, axis=-1) - math.log(p.size), dtype=np.float64)

    def degenerate_probability(self, n: int) -> float:
        """Exact P(a group of n rollouts is all-correct or all-wrong)."""
        p = np.asarray(self.rates)
        return float(np.mean(p**n + (1.0 - p) ** n))

    def describe(self) -> str:
        """Readable form."""
        label = f" from {self.name}" if self.name else ""
        return f"empirical({len(self.rates)} pass rates{label})"


Difficulty = BetaMixture | EmpiricalPassRates
DifficultySpec = str | os.PathLike | tuple | list | np.ndarray | BetaMixture | EmpiricalPassRates

PROFILES: dict[str, Difficulty] = {
    "uniform": BetaMixture(((1.0, 1.0, 1.0),), name="uniform"),
    "u-shaped": BetaMixture(((1.0, 0.3, 0.3),), name="u-shaped"),
    "hard": BetaMixture(((1.0, 1.0, 4.0),), name="hard"),
    "easy": BetaMixture(((1.0, 4.0, 1.0),), name="easy"),
    "rlvr": BetaMixture(((0.25, 0.5, 12.0), (0.15, 12.0, 0.5), (0.60, 1.5, 1.5)), name="rlvr"),
}

DEFAULT_PROFILE = "rlvr"


def list_profiles() -> list[str]:
    """Names of the built-in difficulty profiles."""
    return sorted(PROFILES)


def load_pass_rates(path: str | os.PathLike) -> EmpiricalPassRates:
    """Load empirical pass rates from a text file (numbers separated by whitespace or commas;
    ``#`` comments) or a JSON file (a list of numbers, or an object with key ``pass_rates``).
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"pass-rate file {str(p)!r} does not exist: check the path")
    text = p.read_text()
    values: Any
    if p.suffix.lower() == ".json":
        try:
            values = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"pass-rate file {str(p)!r} is not valid JSON: {exc}") from exc
        if isinstance(values, dict):
            if "pass_rates" not in values:
                raise ValueError(
                    f"JSON pass-rate file {str(p)!r} must be a list or have key 'pass_rates'"
                )
            values = values["pass_rates"]
    else:
        tokens: list[str] = []
        for line in text.splitlines():
            line = line.split("#", 1)[0]
            tokens.extend(t for t in line.replace(",", " ").split() if t)
        try:
            values = [float(t) for t in tokens]
        except ValueError as exc:
            raise ValueError(f"pass-rate file {str(p)!r} holds a non-number: {exc}") from exc
    if not isinstance(values, list):
        raise ValueError(f"pass-rate file {str(p)!r} must hold a list of numbers")
    for i, v in enumerate(values):
        if not _is_number(v):
            raise ValueError(
                f"pass-rate file {str(p)!r}: value {i + 1} is {v!r}, not a number in [0, 1]"
            )
    return EmpiricalPassRates(tuple(float(v) for v in values), name=f"file {str(p)!r}")


_BETA_TEXT = re.compile(r"(?i)beta\(\s*([0-9.eE+-]+)\s*,\s*([0-9.eE+-]+)\s*\)")


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def resolve_difficulty(spec: DifficultySpec) -> Difficulty:
    """Turn a difficulty spec into a ``BetaMixture`` or ``EmpiricalPassRates``.

    Accepted: a profile name; ``"beta(a, b)"`` (text, for command lines); a path to a pass-rate
    file (``.txt``, ``.csv``, ``.json``); a pair ``(a, b)`` for Beta(a, b); a sequence of
    ``(weight, a, b)`` triples for a mixture; a 1-D numpy
    array of empirical pass rates; or an already built difficulty.
    """
    if isinstance(spec, (BetaMixture, EmpiricalPassRates)):
        return spec
    if isinstance(spec, (str, os.PathLike)):
        name = os.fspath(spec)
        if name in PROFILES:
            return PROFILES[name]
        beta = _BETA_TEXT.fullmatch(name.strip())
        if beta:
            return BetaMixture(((1.0, float(beta.group(1)), float(beta.group(2))),), name=name)
        if name.strip().lower().startswith("beta("):
            problem = "has no closing ')'" if ")" not in name else "does not parse"
            raise ValueError(
                f"difficulty {name!r} {problem}: write beta(a, b) with two positive numbers, "
                "e.g. 'beta(0.5, 2)'"
            )
        if Path(name).suffix.lower() in (".txt", ".csv", ".json") or Path(name).is_file():
            return load_pass_rates(name)
        raise unknown_name(
            "difficulty profile",
            name,
            PROFILES,
            "Or give (a, b), [(w, a, b), ...], a numpy array of pass rates, or a file path.",
        )
    if isinstance(spec, np.ndarray):
        return EmpiricalPassRates(tuple(spec.reshape(-1).tolist()))
    if isinstance(spec, Sequence):
        items = list(spec)
        if len(items) == 2 and all(_is_number(x) for x in items):
            return BetaMixture(((1.0, float(items[0]), float(items[1])),))
        if items and all(isinstance(c, Sequence) and not isinstance(c, str) for c in items):
            return BetaMixture(tuple(tuple(c) for c in items))  # type: ignore[arg-type]
        raise ValueError(
            f"difficulty {spec!r} is neither (a, b) nor a list of (weight, a, b) triples: "
            "for empirical pass rates pass a numpy array or a file path"
        )
    raise TypeError(
        f"difficulty must be a profile name, (a, b), [(w, a, b), ...], a numpy array or a path; "
        f"got {type(spec).__name__}"
    )


def fit_beta(difficulty: DifficultySpec, *, min_concentration: float = 1e-2) -> tuple[float, float]:
    """The Beta(a, b) with the difficulty's mean and variance (method of moments).

    Exact moments for mixtures, sample moments for empirical rates. When the variance reaches
    mean·(1 − mean) (all rates 0 or 1), the concentration a + b is floored at
    ``min_concentration`` and the mean kept inside (1e-4, 1 − 1e-4).
    """
    d = resolve_difficulty(difficulty)
    m1, m2 = d.moment(1), d.moment(2)
    mean = min(max(m1, 1e-4), 1.0 - 1e-4)
    var = max(m2 - m1 * m1, 0.0)
    conc = 1e4 if var <= 0.0 else mean * (1.0 - mean) / var - 1.0
    conc = min(max(conc, min_concentration), 1e4)
    return float(mean * conc), float((1.0 - mean) * conc)


def fit_beta_binomial(
    successes: ArrayLike,
    failures: ArrayLike,
    *,
    weights: ArrayLike | None = None,
    bounds: tuple[float, float] = (1e-3, 1e4),
    start: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """The Beta(a, b) prior maximising the Beta-binomial marginal likelihood of the counts.

    Each row is one prompt's evidence: ``successes`` and ``failures`` (real numbers allowed, e.g.
    counts discounted by forgetting), optionally ``weights``. The log-likelihood
    Σ_i w_i·[ln B(a + s_i, b + f_i) − ln B(a, b)] (binomial coefficients are constant) is
    maximised over (ln a, ln b) inside ``bounds`` by projected Newton steps with the exact
    gradient and Hessian (digamma and trigamma; ``_newton_fit``); rows with
    no evidence carry no information and are dropped, identical rows are merged first. Unlike a
    moments fit of posterior means (which are already shrunk toward the prior that produced
    them), this is the empirical-Bayes estimate of the prompts' pass-rate distribution: on
    U-shaped data (many 0/n and n/n groups) it finds a, b well below 1. ``start`` (e.g. the
    previous fit of a store that grew a little) starts the search there instead of at the moments
    of the raw rates: the same optimum in fewer iterations.

    >>> rng = np.random.default_rng(0)
    >>> p = rng.beta(0.3, 0.5, size=20000)
    >>> s = rng.binomial(8, p)
    >>> a, b = fit_beta_binomial(s, 8 - s)
    >>> round(a, 1), round(b, 1)
    (0.3, 0.5)
    """
    from scipy.special import digamma

    s = np.asarray(successes, dtype=np.float64).ravel()
    f = np.asarray(failures, dtype=np.float64).ravel()
    w = np.ones_like(s) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    if not (s.shape == f.shape == w.shape):
        raise ValueError(
            f"successes, failures and weights must have one length each, got {s.size}, "
            f"{f.size} and {w.size}"
        )
    bad = ~np.isfinite(s) | ~np.isfinite(f) | ~np.isfinite(w) | (s < 0) | (f < 0) | (w < 0)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"counts and weights must be finite and >= 0; row {i} has successes={s[i]!r}, "
            f"failures={f[i]!r}, weight={w[i]!r}"
        )
    keep = (s + f > 0) & (w > 0)
    rows, inverse = np.unique(np.stack([s[keep], f[keep]], axis=1), axis=0, return_inverse=True)
    if rows.shape[0] == 0 or np.count_nonzero(keep) < 2:
        raise ValueError(
            f"fit_beta_binomial needs the evidence of at least 2 prompts, got "
            f"{int(np.count_nonzero(keep))}: keep a fixed prior until more prompts are seen"
        )
    wk = np.bincount(inverse.ravel(), weights=w[keep], minlength=rows.shape[0])  # [U]
    su, fu = rows[:, 0], rows[:, 1]  # [U]
    total = float(wk.sum())
    lo, hi = np.log(bounds[0]), np.log(bounds[1])

    def loglik(a: float, b: float) -> float:
        return float(np.sum(wk * betaln(a + su, b + fu)) / total - betaln(a, b))

    def derivatives(a: float, b: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Gradient and Hessian of the mean log-likelihood in (ln a, ln b)."""
        n = su + fu
        x = np.concatenate([a + su, b + fu, a + b + n])  # [3U]
        psi, tri = digamma(x), _trigamma(x)
        u = su.size
        p_s, p_f, p_n = psi[:u], psi[u : 2 * u], psi[2 * u :]
        t_s, t_f, t_n = tri[:u], tri[u : 2 * u], tri[2 * u :]
        d0, d1 = digamma([a, b, a + b]), _trigamma(np.array([a, b, a + b]))
        ga = float(np.sum(wk * (p_s - p_n))) / total - (d0[0] - d0[2])
        gb = float(np.sum(wk * (p_f - p_n))) / total - (d0[1] - d0[2])
        haa = float(np.sum(wk * (t_s - t_n))) / total - (d1[0] - d1[2])
        hbb = float(np.sum(wk * (t_f - t_n))) / total - (d1[1] - d1[2])
        hab = -float(np.sum(wk * t_n)) / total + d1[2]
        g = np.array([a * ga, b * gb])  # chain rule to log space
        h = np.array([[a * a * haa + a * ga, a * b * hab], [a * b * hab, b * b * hbb + b * gb]])
        return g, h

    # Start from the moments of the raw rates (not of shrunk posterior means).
    rate = su / (su + fu)
    mean = float(np.clip(np.average(rate, weights=wk), 0.05, 0.95))
    var = float(np.average((rate - mean) ** 2, weights=wk))
    conc = float(np.clip(mean * (1 - mean) / max(var, 1e-6) - 1.0, 0.1, 100.0))
    x0 = [mean * conc, (1 - mean) * conc] if start is None else list(start)
    if not all(np.isfinite(x0)) or min(x0) <= 0:
        raise ValueError(f"start must be two positive finite numbers (a, b), got {start!r}")
    theta = np.clip(np.log(np.asarray(x0, dtype=np.float64)), lo, hi)
    return _newton_fit(loglik, derivatives, theta, lo, hi)


def _trigamma(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """ψ′(x) by a central difference of digamma at a relative step of 1e-4 (relative error
    about 1e-8, enough for Newton's Hessian): scipy's ``polygamma(1, x)`` goes through the
    Hurwitz zeta function and cost most of a fit."""
    from scipy.special import digamma

    h = 1e-4 * x
    return np.asarray((digamma(x + h) - digamma(x - h)) / (2.0 * h), dtype=np.float64)


def _newton_step(
    g: NDArray[np.float64], h: NDArray[np.float64], free: NDArray[np.bool_]
) -> NDArray[np.float64]:
    """An ascent step on the free coordinates: Newton's −H⁻¹g (2 × 2 by hand), with H shifted
    to be negative definite where it is not (Levenberg–Marquardt, which follows a flat ridge
    of the likelihood instead of crawling up it), or −g/h on one free coordinate."""
    step = np.zeros(2)
    if free.all():
        tr, det = h[0, 0] + h[1, 1], h[0, 0] * h[1, 1] - h[0, 1] * h[1, 0]
        top = 0.5 * (tr + math.sqrt(max(tr * tr - 4.0 * det, 0.0)))  # largest eigenvalue
        if top >= 0:
            shift = top + max(1e-3, 0.1 * abs(top))
            h = h - shift * np.eye(2)
            det = h[0, 0] * h[1, 1] - h[0, 1] * h[1, 0]
        step[0] = -(h[1, 1] * g[0] - h[0, 1] * g[1]) / det
        step[1] = -(h[0, 0] * g[1] - h[1, 0] * g[0]) / det
        return step
    k = int(np.flatnonzero(free)[0])
    curv = h[k, k] if h[k, k] < 0 else -max(1e-3, abs(h[k, k]))
    step[k] = -g[k] / curv
    return step


def _line_search(
    loglik: Any,
    theta: NDArray[np.float64],
    step: NDArray[np.float64],
    f: float,
    lo: float,
    hi: float,
) -> tuple[NDArray[np.float64], float]:
    """The first of θ + t·step, t = 1, 1/2, 1/4, ... (clipped to the bounds) whose likelihood
    beats ``f``, and that likelihood; ``(theta, f)`` when none does down to t = 1e-8."""
    t = 1.0
    while t > 1e-8:
        cand = np.clip(theta + t * step, lo, hi)
        fc = loglik(*np.exp(cand))
        if fc > f:
            return cand, fc
        t *= 0.5
    return theta, f


def _newton_fit(
    loglik: Any,
    derivatives: Any,
    theta: NDArray[np.float64],
    lo: float,
    hi: float,
    *,
    tol: float = 1e-9,
    step_tol: float = 1e-6,
    max_iter: int = 100,
) -> tuple[float, float]:
    """Maximise ``loglik(a, b)`` over θ = (ln a, ln b) in [lo, hi]² from ``theta``: projected
    Newton steps (a coordinate at its bound with the gradient pushing out stays there), the
    gradient direction where the Hessian is not negative definite or the Newton step does not
    raise the likelihood, each halved until it does. Two parameters, no linear-algebra
    library (an L-BFGS-B fit spent most of its time in idle BLAS threads on a busy machine):
    a fit is a few vectorised passes over the distinct rows."""
    f = loglik(*np.exp(theta))
    edge = 1e-4  # a coordinate this close to a bound (in log space) is on it
    for _ in range(max_iter):
        g, h = derivatives(*np.exp(theta))
        free = ~(((theta <= lo + edge) & (g < 0)) | ((theta >= hi - edge) & (g > 0)))
        if not np.any(free) or float(np.max(np.abs(g[free]))) < tol:
            break
        gradient = np.where(free, g, 0.0) / float(np.max(np.abs(g[free])))
        for direction in (_newton_step(g, h, free), gradient):  # Newton, else steepest ascent
            cand, fc = _line_search(loglik, theta, np.clip(direction, -2.0, 2.0), f, lo, hi)
            if fc > f:
                break
        else:
            break  # no direction raises the likelihood: a maximum (within rounding)
        moved = float(np.max(np.abs(cand - theta)))
        theta, f = cand, fc
        if moved < step_tol:
            break
    a, b = np.exp(theta)
    return float(a), float(b)


def apply_drift(p: ArrayLike, shift: float) -> NDArray[np.float64]:
    """Raise pass rates by ``shift`` in logit space (p = 0 and p = 1 stay where they are)."""
    p = np.asarray(p, dtype=np.float64)
    if shift == 0.0:
        return p.copy()
    with np.errstate(divide="ignore"):
        logit = np.log(p) - np.log1p(-p)
    return np.asarray(1.0 / (1.0 + np.exp(-(logit + shift))), dtype=np.float64)


def resolve_beliefs(
    difficulty: DifficultySpec,
    belief: str | tuple[float, float],
    prior_alpha: float | tuple[float, ...] | None,
    prior_beta: float | tuple[float, ...] | None,
) -> tuple[Any, Any]:
    """The belief prior: explicit priors override ``belief``; ``"matched"`` fits ``difficulty``."""
    if prior_alpha is not None and prior_beta is not None:
        return prior_alpha, prior_beta
    if isinstance(belief, str):
        if belief != "matched":
            raise ValueError(
                f"belief must be 'matched' or a pair (a, b), got {belief!r}: "
                "'matched' fits a Beta to the difficulty profile"
            )
        a, b = fit_beta(difficulty)
    else:
        try:
            a, b = (float(x) for x in belief)
        except (TypeError, ValueError):
            raise ValueError(f"belief must be 'matched' or a pair (a, b), got {belief!r}") from None
    return (a if prior_alpha is None else prior_alpha), (b if prior_beta is None else prior_beta)


def resolve_belief_group(group: str, belief_prior: str) -> str:
    """The belief-group column a run uses: ``"auto"`` is ``"level"`` under a fitted prior (one
    fitted Beta per difficulty level, the competition's winner) and ``"none"`` under a fixed
    one; any other value is returned as it is.

    >>> resolve_belief_group("auto", "fitted"), resolve_belief_group("auto", "fixed")
    ('level', 'none')
    """
    if group != "auto":
        return group
    return "level" if belief_prior == "fitted" else "none"
