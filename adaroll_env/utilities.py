"""Training utilities u(s, f) of a group's final counts, and their exact Bayesian expectation.

A utility scores one question's group after it received ``s`` successes and ``f`` failures. Each
is a vectorised pure function of integer numpy arrays and is 0 when n = s + f = 0.

| name | u(s, f), n = s + f | meaning |
|---|---|---|
| ``informative`` | 1 if s>0 and f>0 else 0 | non-zero GRPO gradient (DAPO / Knapsack-RL) |
| ``hit`` | 1 if s>0 | at least one correct rollout (HORA, AR3PO) |
| ``grpo_signal`` | 2·sqrt(s·f)/n | mean absolute std-normalised advantage |
| ``dr_grpo_signal`` | 2·s·f/n² | mean absolute advantage without std normalisation |
| ``snr(κ)`` | 1[s>0, f>0]·(n−1)²/((n−1)² + κ·n) | depth-aware gradient signal-to-noise (a family) |

Parametrised families are named with their numeric arguments, ``"snr(8)"``: the full name is the
utility's identity (index tables and caches key on it), ``list_utility_families()`` lists them and
``register_utility_family`` adds one. A custom utility is named by ``"package.module:function"``
and must follow the same contract.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import betaln, gammaln

from adaroll_env.errors import import_object, unknown_name

UtilityFn = Callable[[NDArray[np.int64], NDArray[np.int64]], NDArray[np.float64]]


def informative(s: ArrayLike, f: ArrayLike) -> NDArray[np.float64]:
    """1 when the group has at least one success and one failure (non-zero GRPO gradient)."""
    # Counts are non-negative, so "s > 0 and f > 0" is a logical and of the counts.
    return np.logical_and(s, f).astype(np.float64)


def hit(s: ArrayLike, f: ArrayLike) -> NDArray[np.float64]:
    """1 when the group has at least one success (HORA's hit utility)."""
    s, _ = np.broadcast_arrays(np.asarray(s), np.asarray(f))
    return (s > 0).astype(np.float64)


def grpo_signal(s: ArrayLike, f: ArrayLike) -> NDArray[np.float64]:
    """Mean absolute std-normalised advantage of the group, 2·sqrt(s·f)/n (0 at n = 0)."""
    s, f = np.asarray(s, dtype=np.float64), np.asarray(f, dtype=np.float64)
    n = s + f
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(n > 0, 2.0 * np.sqrt(s * f) / np.where(n > 0, n, 1.0), 0.0)
    return np.asarray(out, dtype=np.float64)


def dr_grpo_signal(s: ArrayLike, f: ArrayLike) -> NDArray[np.float64]:
    """Mean absolute advantage without std normalisation, 2·s·f/n² (0 at n = 0)."""
    s, f = np.asarray(s, dtype=np.float64), np.asarray(f, dtype=np.float64)
    n = s + f
    out = np.where(n > 0, 2.0 * s * f / np.where(n > 0, n, 1.0) ** 2, 0.0)
    return np.asarray(out, dtype=np.float64)


def snr(kappa: float) -> UtilityFn:
    """The depth-aware utility u = 1[s>0, f>0]·(n−1)²/((n−1)² + κ·n), saturating in n.

    Derivation (a one-step model of the GRPO gradient; docs: design §2 and §10). A mixed group of n
    rollouts contributes n − 1 degrees of freedom of advantage signal, so the batch gradient's
    signal grows with Σ(n_i − 1); prompts disagree about the direction, so the between-prompt part
    of its noise grows with Σ(n_i − 1)²; every rollout adds independent sampling noise, Σ n_i. One
    prompt's share of the signal-to-noise is then (n − 1)² / ((n − 1)² + κ·n), with κ the ratio of
    within-prompt sampling noise to between-prompt spread. At κ → 0 it is ``informative`` (2
    rollouts count as much as 16); as κ grows it approaches (n − 1)²/(κ·n), linear in n like the
    gradient mass that pours the budget into few prompts. 0 for degenerate groups and n < 2.

    >>> snr(8.0)(np.array([1, 8]), np.array([1, 8])).round(3)
    array([0.059, 0.637])
    """
    k = float(kappa)
    if not np.isfinite(k) or k <= 0.0:
        raise ValueError(
            f"snr's kappa must be a finite number > 0, got {kappa!r}: kappa is the ratio of "
            "within-prompt sampling noise to between-prompt spread (e.g. snr(8)); "
            "kappa -> 0 is 'informative'"
        )

    def utility(s: ArrayLike, f: ArrayLike) -> NDArray[np.float64]:
        s_arr, f_arr = np.asarray(s, dtype=np.float64), np.asarray(f, dtype=np.float64)
        n = s_arr + f_arr
        d2 = (n - 1.0) ** 2
        mixed = (s_arr > 0) & (f_arr > 0)
        out = np.where(mixed, d2 / np.where(mixed, d2 + k * n, 1.0), 0.0)
        return np.asarray(out, dtype=np.float64)

    utility.__name__ = utility.__qualname__ = f"snr({k:g})"
    return utility


UtilityFamily = Callable[..., UtilityFn]

_FAMILIES: dict[str, UtilityFamily] = {"snr": snr}

_FAMILY_NAME = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*$")


def list_utility_families() -> list[str]:
    """Names of the registered parametrised utility families (named as ``"family(args)"``)."""
    return sorted(_FAMILIES)


def register_utility_family(name: str, factory: UtilityFamily, *, overwrite: bool = False) -> None:
    """Register ``factory(*numbers) -> u(s, f)`` so that ``"name(x, y)"`` names a utility.

    The factory validates its own arguments (raising ``ValueError`` with the fix). Like
    ``register_utility``, registration is per process.
    """
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"utility family name {name!r} must be an identifier (letters, _, digits)")
    if name in _FAMILIES and not overwrite:
        raise ValueError(
            f"utility family {name!r} is already registered: pass overwrite=True to replace it"
        )
    if not callable(factory):
        raise TypeError(f"utility family {name!r} must be callable, got {type(factory).__name__}")
    _FAMILIES[name] = factory
    get_utility.cache_clear()


def _family_utility(name: str, match: re.Match[str]) -> UtilityFn:
    family, text = match.group(1), match.group(2)
    if family not in _FAMILIES:
        raise unknown_name(
            "utility family", family, _FAMILIES, f"(in {name!r}; families take numbers: 'snr(8)')"
        )
    args: list[float] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            args.append(float(part))
        except ValueError:
            raise ValueError(
                f"utility {name!r}: argument {part!r} is not a number; "
                f"write the family's numeric arguments, e.g. '{family}(8)'"
            ) from None
    try:
        return _FAMILIES[family](*args)
    except TypeError as exc:
        raise ValueError(f"utility {name!r}: wrong number of arguments ({exc})") from None


_REGISTRY: dict[str, UtilityFn] = {
    "informative": informative,
    "hit": hit,
    "grpo_signal": grpo_signal,
    "dr_grpo_signal": dr_grpo_signal,
}


def list_utilities() -> list[str]:
    """Names of the registered utilities."""
    return sorted(_REGISTRY)


def register_utility(name: str, fn: UtilityFn, *, overwrite: bool = False) -> None:
    """Register ``fn`` under ``name`` so that ``AllocationParams(utility=name)`` finds it.

    Registration is per process: for work that crosses processes (the parallel benchmark),
    name the utility by its ``"package.module:function"`` path instead.
    """
    if ":" in name:
        raise ValueError(f"utility name {name!r} contains ':', which marks import paths: rename it")
    if name in _REGISTRY and not overwrite:
        raise ValueError(
            f"utility {name!r} is already registered: pass overwrite=True to replace it"
        )
    if not callable(fn):
        raise TypeError(f"utility {name!r} must be callable u(s, f), got {type(fn).__name__}")
    _REGISTRY[name] = fn
    get_utility.cache_clear()


@functools.lru_cache(maxsize=64)
def get_utility(name: str) -> UtilityFn:
    """Resolve a registered utility name or a ``"package.module:function"`` path."""
    if not isinstance(name, str):
        raise TypeError(
            f"utility must be a registered name or 'module:function' string, got {name!r}"
        )
    family = _FAMILY_NAME.match(name)
    if family is not None:
        return _family_utility(name, family)
    if ":" in name:
        fn: Any = import_object(name, "utility")
        if not callable(fn):
            raise TypeError(f"utility {name!r} resolves to {fn!r}, which is not callable")
        probe = np.asarray(fn(np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)))
        if probe.shape != (2,) or np.any(probe != 0):
            raise ValueError(
                f"utility {name!r} must be vectorised over numpy arrays and 0 at n = 0; "
                f"u([0, 0], [0, 0]) gave {probe!r}"
            )
        return fn  # type: ignore[no-any-return]
    try:
        return _REGISTRY[name]
    except KeyError:
        raise unknown_name(
            "utility",
            name,
            _REGISTRY,
            "Or a parametrised family ("
            + ", ".join(f"'{f}(...)'" for f in sorted(_FAMILIES))
            + "), or a custom one as 'package.module:function'.",
        ) from None


def log_binomial(m: ArrayLike, k: ArrayLike) -> NDArray[np.float64]:
    """log C(m, k) = ln Γ(m+1) − ln Γ(k+1) − ln Γ(m−k+1), elementwise (numpy broadcast).

    The one log binomial coefficient of adaroll (Beta-binomial and binomial outcome tables call
    it). Defined for 0 <= k <= m; callers mask the entries with k > m themselves.
    """
    m = np.asarray(m, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    return np.asarray(gammaln(m + 1.0) - gammaln(k + 1.0) - gammaln(m - k + 1.0))


def beta_binomial_logpmf(k: ArrayLike, m: ArrayLike, a: ArrayLike, b: ArrayLike) -> NDArray:
    """Log-probability of k successes in m draws from Beta-binomial(m, a, b), in log space."""
    k, m = np.asarray(k, dtype=np.float64), np.asarray(m, dtype=np.float64)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.asarray(log_binomial(m, k) + betaln(a + k, b + m - k) - betaln(a, b))


def expected_utility(
    utility: str | UtilityFn,
    alpha: ArrayLike,
    beta: ArrayLike,
    s: ArrayLike,
    f: ArrayLike,
    m: int,
) -> NDArray[np.float64]:
    """Exact E[u(s + S, f + m - S)] with S ~ Beta-binomial(m, alpha + s, beta + f).

    ``alpha, beta`` are the question's **prior**, ``(s, f)`` the counts so far, ``m`` the number
    of further rollouts. Arguments broadcast against each other; the result has their shape.
    The Beta-binomial weights are computed in log space and normalised with ``logsumexp``, so the
    result is stable for m up to thousands and alpha, beta from 1e-3 to 1e4.
    """
    fn = get_utility(utility) if isinstance(utility, str) else utility
    if isinstance(m, bool) or int(m) != m or m < 0:
        raise ValueError(f"m (further rollouts) must be a non-negative integer, got {m!r}")
    m = int(m)
    a, b, s_arr, f_arr = np.broadcast_arrays(
        np.asarray(alpha, dtype=np.float64),
        np.asarray(beta, dtype=np.float64),
        np.asarray(s, dtype=np.int64),
        np.asarray(f, dtype=np.int64),
    )
    if np.any(~np.isfinite(a)) or np.any(a <= 0) or np.any(~np.isfinite(b)) or np.any(b <= 0):
        raise ValueError("alpha and beta must be finite and > 0: check the prior")
    if np.any(s_arr < 0) or np.any(f_arr < 0):
        raise ValueError("counts s and f must be non-negative")
    if m == 0:
        return np.asarray(fn(s_arr, f_arr), dtype=np.float64)
    k = np.arange(m + 1, dtype=np.int64)  # [K]
    pa = (a + s_arr)[..., None]  # [..., 1]
    pb = (b + f_arr)[..., None]  # [..., 1]
    logw = beta_binomial_logpmf(k, m, pa, pb)  # [..., K]
    # Normalise in log space (numpy's max shift: scipy's logsumexp costs ~0.2 ms a call).
    top = np.max(logw, axis=-1, keepdims=True)  # [..., 1]
    logw = logw - (top + np.log(np.sum(np.exp(logw - top), axis=-1, keepdims=True)))
    s_fin = s_arr[..., None] + k  # [..., K]
    f_fin = f_arr[..., None] + (m - k)  # [..., K]
    values = np.asarray(fn(s_fin, f_fin), dtype=np.float64)  # [..., K]
    return np.asarray(np.sum(np.exp(logw) * values, axis=-1), dtype=np.float64)
