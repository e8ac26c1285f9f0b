"""The BAMDP-optimal allocator: exact where affordable, certified where not (docs: design §4).

- ``agents.bamdp.index``: index tables λ*(s, f) per (prior, utility, cap);
- ``agents.bamdp.cache``: those tables cached in memory and on disk;
- ``agents.bamdp.bound``: ``upper_bound(params)``, the certified Lagrangian bound;
- ``agents.bamdp.exact``: ``solve_exact``, backward induction over the folded belief states;
- ``agents.bamdp.states``: ``estimate_states``, how many states the exact solver would visit;
- ``agents.bamdp.solve``: ``adaroll solve`` (build and cache tables, draw the policy);
- ``agents.bamdp.allocator``: ``BAMDPAllocator``, registered as ``bamdp``.

Its benchmark report (``scripts/bench_bamdp.py``) lives in ``agents.benchmarks.bamdp``: the solver
does not depend on the benchmark harness.
"""

from __future__ import annotations

from agents.bamdp.allocator import BAMDPAllocator
from agents.bamdp.bound import dual_value, upper_bound
from agents.bamdp.cache import get_table
from agents.bamdp.index import IndexTable, TableSpec, build_table

__all__ = [
    "BAMDPAllocator",
    "IndexTable",
    "TableSpec",
    "build_table",
    "dual_value",
    "get_table",
    "upper_bound",
]
