"""agents: allocators that compete in the adaroll environments, their registry and benchmark.

>>> import gymnasium as gym, adaroll_env, agents
>>> env = gym.make("AdaRoll/BetaBernoulli-v0")
>>> allocator = agents.make_allocator("uniform", env, seed=0)
>>> obs, info = env.reset(seed=0)
>>> action = allocator.act(obs)
"""

from __future__ import annotations

from agents.base import Allocator, BaseAllocator, Beliefs, read_beliefs
from agents.checker import AllocatorCheckError, check_allocator
from agents.registry import (
    ENTRY_POINT_GROUP,
    list_allocators,
    make_allocator,
    register_allocator,
)

register_allocator("uniform", "agents.baselines:UniformAllocator")
register_allocator("random", "agents.baselines:RandomAllocator")

__all__ = [
    "ENTRY_POINT_GROUP",
    "Allocator",
    "AllocatorCheckError",
    "BaseAllocator",
    "Beliefs",
    "check_allocator",
    "list_allocators",
    "make_allocator",
    "read_beliefs",
    "register_allocator",
]
