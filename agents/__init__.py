"""agents: allocators that compete in the adaroll environments, their registry and benchmark.

>>> import gymnasium as gym, adaroll_env, agents
>>> env = gym.make("AdaRoll/BetaBernoulli-v0")
>>> allocator = agents.make_allocator("uniform", env, seed=0)
>>> obs, info = env.reset(seed=0)
>>> action = allocator.act(obs)
"""

from __future__ import annotations

from adaroll_env.moved import alias_modules
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
register_allocator("prior_filter", "agents.baselines:PriorFilterAllocator")
register_allocator("oracle", "agents.bandits.allocators:OracleAllocator")
register_allocator("thompson", "agents.bandits.allocators:ThompsonAllocator")
register_allocator("bayes_ucb", "agents.bandits.allocators:BayesUCBAllocator")
register_allocator("knowledge_gradient", "agents.bandits.allocators:KnowledgeGradientAllocator")
register_allocator("greedy", "agents.bandits.allocators:GreedyAllocator")
register_allocator("variance", "agents.bandits.allocators:VarianceAllocator")

register_allocator("vip", "agents.literature.allocators:VIPAllocator")
register_allocator("knapsack", "agents.literature.allocators:KnapsackAllocator")
register_allocator("reinforce_ada", "agents.literature.allocators:ReinforceAdaAllocator")
register_allocator("pilot_commit", "agents.literature.allocators:PilotCommitAllocator")
register_allocator("greso", "agents.literature.allocators:GresoAllocator")

#: old module path -> new one (version 4); each imports with a ``DeprecationWarning`` for one
#: release. The run-directory reader and ``--from-run`` moved to ``trainers`` (they read trainer
#: runs), so their old paths here import ``trainers`` modules: use the new paths.
MOVED = {
    "agents.bandit_values": "agents.bandits.value_tables",
    "agents.benchmark": "agents.benchmarks",
    "agents.benchmarks.from_run": "trainers.experiments.sim_to_real",
    "agents.benchmarks.from_run_report": "trainers.experiments.sim_to_real_report",
    "agents.benchmarks.run_files": "trainers.run.run_files",
    "agents.exact": "agents.policy_value",
    "agents.literature_plans": "agents.literature.planners",
}
alias_modules(MOVED)

__all__ = [
    "ENTRY_POINT_GROUP",
    "MOVED",
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
