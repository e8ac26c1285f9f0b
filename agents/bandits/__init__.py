"""Bandit allocators (UCB, Thompson, knowledge gradient, ...) and their value tables.

Rooms (``agents.bandits.``): ``allocators`` (the allocator classes) and ``value_tables`` (pure
functions of arrays: value tables over credible points, the variance split, concave majorants,
the clearing price). The allocators module re-exports both; so does this package, the documented
path.
"""

from __future__ import annotations

from agents.bandits.allocators import *  # noqa: F403
from agents.bandits.allocators import __all__ as __all__
