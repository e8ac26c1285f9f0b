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
from agents.contract import AllocationError, check_allocation
from agents.registry import (
    ENTRY_POINT_GROUP,
    list_allocators,
    make_allocator,
    register_allocator,
)

register_allocator("uniform", "agents.baselines:UniformAllocator")
register_allocator("bamdp", "agents.bamdp.allocator:BAMDPAllocator")
register_allocator("random", "agents.baselines:RandomAllocator")
register_allocator("oracle", "agents.bandits:OracleAllocator")
register_allocator("thompson", "agents.bandits:ThompsonAllocator")
register_allocator("bayes_ucb", "agents.bandits:BayesUCBAllocator")
register_allocator("knowledge_gradient", "agents.bandits:KnowledgeGradientAllocator")
register_allocator("greedy", "agents.bandits:GreedyAllocator")
register_allocator("variance", "agents.bandits:VarianceAllocator")

register_allocator("vip", "agents.literature:VIPAllocator")
register_allocator("knapsack", "agents.literature:KnapsackAllocator")
register_allocator("reinforce_ada", "agents.literature:ReinforceAdaAllocator")
register_allocator("pilot_commit", "agents.literature:PilotCommitAllocator")
register_allocator("greso", "agents.literature:GresoAllocator")

__all__ = [
    "ENTRY_POINT_GROUP",
    "AllocationError",
    "Allocator",
    "AllocatorCheckError",
    "BaseAllocator",
    "Beliefs",
    "check_allocation",
    "check_allocator",
    "list_allocators",
    "make_allocator",
    "read_beliefs",
    "register_allocator",
]
