"""The one home of summary statistics and run provenance shared by every adaroll package."""

from __future__ import annotations

import contextlib
import math
import platform
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["library_versions", "mean_ci"]


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Mean and the half-width of its Student-t confidence interval at ``level``.

    With fewer than two values the interval is undefined: the half-width is NaN (and the mean is
    NaN for no values), never a misleading 0.
    """
    from scipy import stats

    arr = np.asarray(values, dtype=np.float64)
    n = arr.size
    if n < 2:
        return (float(arr.mean()) if n else math.nan), math.nan
    sem = float(arr.std(ddof=1)) / math.sqrt(n)
    return float(arr.mean()), float(stats.t.ppf(0.5 + level / 2, n - 1)) * sem


#: Packages recorded beside every run, when installed.
BASE_PACKAGES: tuple[str, ...] = ("adaroll", "numpy", "scipy", "gymnasium")


def library_versions(extra: Iterable[str] = ()) -> dict[str, str]:
    """Python, platform and the versions of ``BASE_PACKAGES`` plus ``extra`` (installed ones).

    Recorded beside every run (benchmarks, training runs, competitions); read from the installed
    distributions, so nothing heavy is imported.
    """
    import importlib.metadata as md

    out = {"python": platform.python_version(), "platform": platform.platform()}
    for name in (*BASE_PACKAGES, *extra):
        with contextlib.suppress(md.PackageNotFoundError):
            out[name] = md.version(name)
    return out
