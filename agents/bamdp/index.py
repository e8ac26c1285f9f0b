"""Index tables of the Lagrangian relaxation: one question, a price λ per rollout.

For a price λ, each question alone is an optimal-stopping problem over its own counts (s, f):

    V(s, f; λ) = max( u(s, f),  −λ + p·V(s+1, f; λ) + (1 − p)·V(s, f+1; λ) ),   p = (a+s)/(a+b+n)

with V = u at the cap. The continue value falls with λ at least one-for-one and the stop value
does not move, so continuing beats stopping exactly for λ below a threshold, the **index**
λ*(s, f). The tables store λ*(s, f) for one (prior, utility, cap); they do not depend on the
batch. Online, the next rollouts go to the questions with the highest indices.

Computation: one backward pass over the triangle n = s + f ≤ H carries V(·; λ) on a grid of K
prices at once (``lambda_grid``: sinh-spaced, dense near 0, covering every possible index,
[−Δ, Δ] with Δ the utility's range), finds each state's crossing C(s, f; λ) = u(s, f) on the grid
and places it by linear interpolation between the two bracketing prices. Cost O(H²·K).

Horizon: the table covers n ≤ H = min(cap, ``max_horizon``). When the cap lies beyond H, the
states at n = H get the optimistic continue value ``ū − λ`` (ū: the largest utility any state up
to the cap reaches), so V is never underestimated there: what the bound needs to stay certified.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from adaroll_env.model import posterior_mean
from adaroll_env.utilities import UtilityFn, get_utility

#: Prices on the grid of the backward pass.
GRID_SIZE = 1024
#: Largest n covered by a table when the cap is larger.
MAX_HORIZON = 256
#: Bumped whenever table contents change meaning (part of the disk-cache key).
TABLE_VERSION = 1


@dataclass(frozen=True)
class TableSpec:
    """What an index table depends on: the prior, the utility, the cap, the horizon."""

    alpha: float
    beta: float
    utility: str
    cap: int
    horizon: int
    grid_size: int = GRID_SIZE

    @classmethod
    def make(
        cls,
        alpha: float,
        beta: float,
        utility: str,
        cap: int,
        *,
        max_horizon: int = MAX_HORIZON,
        grid_size: int = GRID_SIZE,
    ) -> TableSpec:
        """A spec with the horizon min(cap, max_horizon)."""
        if not (math.isfinite(alpha) and alpha > 0 and math.isfinite(beta) and beta > 0):
            raise ValueError(f"prior ({alpha!r}, {beta!r}) must be finite and > 0")
        if cap < 1:
            raise ValueError(f"cap must be >= 1, got {cap}")
        return cls(
            float(alpha), float(beta), utility, int(cap), int(min(cap, max_horizon)), int(grid_size)
        )

    def digest(self) -> str:
        """A stable hash of the spec (and of a custom utility's code) for the disk cache."""
        fields = dataclasses.astuple(self)
        fn = get_utility(self.utility)
        code = getattr(getattr(fn, "__code__", None), "co_code", b"")
        raw = f"{TABLE_VERSION}|{fields!r}|".encode() + hashlib.sha256(code).digest()
        return hashlib.sha256(raw).hexdigest()[:24]


@dataclass(frozen=True, eq=False)
class IndexTable:
    """λ*(s, f) for n = s + f ≤ horizon (``index[s, f]``; −inf where no rollout can follow, NaN
    outside the triangle)."""

    spec: TableSpec
    index: NDArray[np.float64]


@functools.lru_cache(maxsize=256)
def utility_range(fn: UtilityFn, cap: int) -> tuple[float, float]:
    """(min, max) of u over the triangle n ≤ cap (by levels, so cap in the thousands is fine);
    remembered per (utility, cap): the plan, the bound and the tables of one setting all ask."""
    lo, hi = math.inf, -math.inf
    for n in range(cap + 1):
        s = np.arange(n + 1)
        v = np.asarray(fn(s, n - s), dtype=np.float64)
        lo, hi = min(lo, float(v.min())), max(hi, float(v.max()))
    return lo, hi


def lambda_grid(delta: float, size: int = GRID_SIZE) -> NDArray[np.float64]:
    """Sinh-spaced prices over [−1.01·Δ, 1.01·Δ], dense near 0 (relative spacing ≈ 28/size)."""
    T = 14.0
    t = np.linspace(-T, T, size)
    return np.asarray(1.01 * max(delta, 1e-12) * np.sinh(t) / math.sinh(T), dtype=np.float64)


@functools.lru_cache(maxsize=256)
def _levels(spec: TableSpec) -> tuple[UtilityFn, float, float]:
    """(u, utility range Δ, ū) of a spec; cached, since the range scans every level to the cap
    and the bound asks for it at every price it evaluates."""
    fn = get_utility(spec.utility)
    u_lo, u_hi = utility_range(fn, spec.cap)
    # ū: the best utility reachable past the horizon (optimistic continue value there).
    u_bar = u_hi if spec.cap > spec.horizon else math.nan
    return fn, u_hi - u_lo, u_bar


def build_table(spec: TableSpec, *, jit: bool | None = None) -> IndexTable:
    """Compute the index table of ``spec`` by one backward pass on the price grid.

    ``jit``: use the numba kernel (the ``jit`` extra; bit-identical tables); None uses it when
    numba is installed and ``ADAROLL_NO_JIT`` is not set.
    """
    from agents.bamdp import _jit

    if jit is None:
        jit = _jit.AVAILABLE and not os.environ.get("ADAROLL_NO_JIT")
    if jit and not _jit.AVAILABLE:
        raise ImportError('build_table(jit=True) needs numba: pip install -e ".[jit]"')
    fn, delta, u_bar = _levels(spec)
    lam = lambda_grid(delta, spec.grid_size)  # [K]
    H, a, b = spec.horizon, spec.alpha, spec.beta
    if jit:
        U = np.zeros((H + 1, H + 1))  # [n, s]
        P = np.zeros((H + 1, H + 1))  # [n, s]
        for n in range(H + 1):
            s = np.arange(n + 1)
            U[n, : n + 1] = np.asarray(fn(s, n - s), dtype=np.float64)
            P[n, : n + 1] = posterior_mean(a, b, s, n - s)
        index = _jit.backward(U, P, lam, spec.cap, H, u_bar)
        return IndexTable(spec, index)
    index = np.full((H + 1, H + 1), np.nan)
    V_next: NDArray[np.float64] | None = None
    for n in range(H, -1, -1):
        s = np.arange(n + 1)
        u = np.asarray(fn(s, n - s), dtype=np.float64)  # [n+1]
        if n >= spec.cap:
            index[s, n - s] = -np.inf
            V_next = np.repeat(u[:, None], lam.size, axis=1)  # [n+1, K]
            continue
        if n == H:  # truncated horizon: optimistic continue value
            C = np.broadcast_to(u_bar - lam, (n + 1, lam.size))  # [n+1, K]
        else:
            assert V_next is not None
            p = posterior_mean(a, b, s, n - s)[:, None]  # [n+1, 1]
            C = p * V_next[1:] + (1.0 - p) * V_next[:-1] - lam  # [n+1, K]
        D = C - u[:, None]  # [n+1, K], decreasing along K
        index[s, n - s] = _crossing(lam, D)
        V_next = np.maximum(C, u[:, None])
    return IndexTable(spec, index)


def _crossing(lam: NDArray[np.float64], D: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per row, the λ where the decreasing D crosses 0 (linear interpolation on the grid)."""
    k = np.count_nonzero(D >= 0.0, axis=1)  # [rows]; D >= 0 on a prefix of the grid
    K = lam.size
    lo = np.clip(k - 1, 0, K - 2)
    rows = np.arange(D.shape[0])
    d0, d1 = D[rows, lo], D[rows, lo + 1]
    l0, l1 = lam[lo], lam[lo + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(d0 != d1, l0 + d0 * (l1 - l0) / (d0 - d1), l0)
    return np.asarray(x, dtype=np.float64)


@functools.lru_cache(maxsize=256)
def level_arrays(
    alpha: float, beta: float, utility: str, horizon: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(U, P) of a prior up to ``horizon``: U[n, s] = u(s, n − s) and P[n, s] = the posterior
    mean at (s, n − s), for s ≤ n ≤ horizon (zeros above the diagonal); cached and read-only,
    since the bound's price search reads them at every price it tries."""
    fn = get_utility(utility)
    U = np.zeros((horizon + 1, horizon + 1))
    P = np.zeros((horizon + 1, horizon + 1))
    for n in range(horizon + 1):
        s = np.arange(n + 1)
        U[n, : n + 1] = np.asarray(fn(s, n - s), dtype=np.float64)
        P[n, : n + 1] = posterior_mean(alpha, beta, s, n - s)
    for x in (U, P):
        x.flags.writeable = False
    return U, P


def _start_py(
    U: NDArray[np.float64],
    P: NDArray[np.float64],
    cap: int,
    H: int,
    level: int,
    lam: float,
    u_bar: float,
) -> NDArray[np.float64]:
    """V(s, level − s; λ) for s = 0..level by the scalar backward pass from n = H."""
    V_next = np.empty(H + 2)
    V = np.empty(H + 2)
    for n in range(H, level - 1, -1):
        for s in range(n + 1):
            u = U[n, s]
            if n >= cap:
                V[s] = u
                continue
            if n == H:
                c = u_bar - lam
            else:
                p = P[n, s]
                c = p * V_next[s + 1] + (1.0 - p) * V_next[s] - lam
            V[s] = c if c > u else u
        V, V_next = V_next, V
    return V_next[: level + 1].copy()


def start_values(specs: list[TableSpec], lam: float, level: int) -> list[NDArray[np.float64]]:
    """Exact V(s, level − s; λ) for s = 0..level of each spec, by a scalar backward pass at one
    price (what the certified bound evaluates, at every price its search tries: compiled where
    numba is installed, on cached ``level_arrays``)."""
    out = []
    for spec in specs:
        _, _, u_bar = _levels(spec)
        U, P = level_arrays(spec.alpha, spec.beta, spec.utility, spec.horizon)
        out.append(_start_kernel(U, P, spec.cap, spec.horizon, level, float(lam), u_bar))
    return out


def _compile_start() -> Any:
    from agents.bamdp import _jit

    if _jit.AVAILABLE and not os.environ.get("ADAROLL_NO_JIT"):
        return _jit.numba.njit(cache=True)(_start_py)
    return _start_py


_start_kernel: Any = _compile_start()
