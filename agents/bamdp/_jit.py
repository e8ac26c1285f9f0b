"""numba kernel of the index-table backward pass (the ``jit`` extra); same arithmetic, in the
same order, as the numpy pass in ``agents.bamdp.index`` so the tables are bit-identical."""

from __future__ import annotations

from typing import Any

import numpy as np

try:  # pragma: no cover - exercised when numba is installed
    import numba
except ImportError:  # pragma: no cover
    numba = None  # type: ignore[assignment]

AVAILABLE = numba is not None


def _backward(
    U: np.ndarray,  # [H+1, H+1]: U[n, s] = u(s, n − s)
    P: np.ndarray,  # [H+1, H+1]: P[n, s] = success probability at (s, n − s)
    lam: np.ndarray,  # [K]
    cap: int,
    H: int,
    u_bar: float,
) -> np.ndarray:
    K = lam.shape[0]
    index = np.full((H + 1, H + 1), np.nan)
    V_next = np.empty((H + 2, K))
    V = np.empty((H + 2, K))
    C = np.empty(K)
    for n in range(H, -1, -1):
        for s in range(n + 1):
            u = U[n, s]
            if n >= cap:
                index[s, n - s] = -np.inf
                for k in range(K):
                    V[s, k] = u
                continue
            if n == H:
                for k in range(K):
                    C[k] = u_bar - lam[k]
            else:
                p = P[n, s]
                q = 1.0 - p
                for k in range(K):
                    C[k] = p * V_next[s + 1, k] + q * V_next[s, k] - lam[k]
            count = 0
            for k in range(K):
                if C[k] - u >= 0.0:
                    count += 1
            lo = min(max(count - 1, 0), K - 2)
            d0 = C[lo] - u
            d1 = C[lo + 1] - u
            l0 = lam[lo]
            l1 = lam[lo + 1]
            index[s, n - s] = l0 + d0 * (l1 - l0) / (d0 - d1) if d0 != d1 else l0
            for k in range(K):
                V[s, k] = C[k] if C[k] > u else u
        V, V_next = V_next, V
    return index


backward: Any = numba.njit(cache=True, fastmath=False)(_backward) if AVAILABLE else None
