"""Allocators from the literature (VIP, Knapsack RL, Reinforce-Ada, GRESO, ...) and their planners.

Rooms (``agents.literature.``): ``allocators`` (the allocator classes, each docstring naming its
paper and formula) and ``planners`` (pure functions of arrays: the final group sizes, level
fills and skip probabilities the allocators follow). The allocators module re-exports both; so does
this package.
"""

from __future__ import annotations

from agents.literature.allocators import *  # noqa: F403
from agents.literature.allocators import __all__ as __all__
