import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest

import agents
from adaroll_env import AllocationParams
from agents import registry


@pytest.fixture
def env():
    return gym.make("AdaRoll/BetaBernoulli-v0", num_questions=4, budget=12)


@pytest.fixture
def clean_registry():
    saved = dict(registry._REGISTRY)
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


PLUGIN = textwrap.dedent(
    """
    import numpy as np
    from agents import BaseAllocator

    class FirstFeasible(BaseAllocator):
        '''Every rollout to the lowest-index question with room.'''

        name = "first_feasible"

        def __init__(self, *, offset=0):
            super().__init__()
            self.offset = offset

        def allocate(self, obs):
            b = self.beliefs(obs)
            counts = np.zeros(b.rollouts.shape[0], dtype=np.int64)
            left = b.round_size
            order = np.argsort((np.arange(counts.size) - self.offset) % counts.size, kind="stable")
            for i in order:
                take = min(left, int(b.capacity[i]))
                counts[i] += take
                left -= take
            return counts

    class Broken:
        name = "broken"

        def reset(self, params, *, seed=None):
            pass
    """
)


@pytest.fixture
def plugin_module(tmp_path, monkeypatch):
    (tmp_path / "adaroll_test_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "adaroll_test_plugin"
    sys.modules.pop("adaroll_test_plugin", None)


def test_builtins_listed():
    names = agents.list_allocators()
    assert "uniform" in names and "random" in names


def test_make_allocator_from_params_and_env(env):
    params = env.unwrapped.params
    a = agents.make_allocator("uniform", params, seed=1)
    b = agents.make_allocator("uniform", env, seed=1)
    assert a.params == b.params == params


def test_unknown_name_suggests_closest(env):
    with pytest.raises(ValueError, match="Did you mean 'uniform'"):
        agents.make_allocator("unifrom", env)


def test_sb3_spec_without_a_model_says_what_to_give(env):
    with pytest.raises(ValueError, match=r"no SB3 model at 'model\.zip'.*train-sb3"):
        agents.make_allocator("sb3:model.zip", env)


def test_bad_params_type():
    with pytest.raises(TypeError, match="AllocationParams"):
        agents.make_allocator("uniform", object())


def test_module_class_spec(env, plugin_module):
    alloc = agents.make_allocator(f"{plugin_module}:FirstFeasible", env, offset=2)
    obs, _ = env.reset(seed=0)
    assert alloc.act(obs) == 2
    agents.check_allocator(alloc, env)


def test_module_class_spec_missing_methods(env, plugin_module):
    with pytest.raises(TypeError, match=r"missing allocate, act, predict"):
        agents.make_allocator(f"{plugin_module}:Broken", env)


def test_module_class_spec_bad_kwargs(env, plugin_module):
    with pytest.raises(TypeError, match="cannot build"):
        agents.make_allocator(f"{plugin_module}:FirstFeasible", env, nope=1)


def test_bad_module_spec(env):
    with pytest.raises(ValueError, match="cannot import module"):
        agents.make_allocator("no_such_module_xyz:Thing", env)
    with pytest.raises(ValueError, match="has no attribute"):
        agents.make_allocator("agents.baselines:NoSuchThing", env)


def test_register_allocator(env, clean_registry, plugin_module):
    agents.register_allocator("first", f"{plugin_module}:FirstFeasible")
    assert "first" in agents.list_allocators()
    alloc = agents.make_allocator("first", env)
    obs, _ = env.reset(seed=0)
    assert alloc.act(obs) == 0
    with pytest.raises(ValueError, match="already registered"):
        agents.register_allocator("first", f"{plugin_module}:FirstFeasible")
    with pytest.raises(ValueError, match="':'"):
        agents.register_allocator("a:b", f"{plugin_module}:FirstFeasible")


def test_entry_point_group(env, tmp_path, monkeypatch, plugin_module):
    dist = tmp_path / "adaroll_test_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: adaroll-test-plugin\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text(
        f"[adaroll.allocators]\nfirst_ep = {plugin_module}:FirstFeasible\n"
    )
    assert "first_ep" in agents.list_allocators()
    alloc = agents.make_allocator("first_ep", env, offset=1)
    obs, _ = env.reset(seed=0)
    assert alloc.act(obs) == 1


def test_make_allocator_resets_with_seed():
    params = AllocationParams(num_questions=5, mode="rounds", round_size=5)
    a = agents.make_allocator("random", params, seed=4)
    b = agents.make_allocator("random", params, seed=4)
    assert np.array_equal(a.rng.integers(0, 1000, 5), b.rng.integers(0, 1000, 5))


def test_parse_allocator_kwargs_checks_the_constructor():
    assert registry.parse_allocator_kwargs("thompson", '{"max_horizon": 8}') == {"max_horizon": 8}
    assert registry.parse_allocator_kwargs("uniform", "") == {}
    with pytest.raises(ValueError, match=r"Did you mean 'max_horizon'\? Its parameters: max_h"):
        registry.parse_allocator_kwargs("thompson", '{"max_horizn": 8}')
    with pytest.raises(ValueError, match="Its parameters: none"):
        registry.parse_allocator_kwargs("uniform", '{"x": 1}')
    with pytest.raises(ValueError, match="not valid JSON"):
        registry.parse_allocator_kwargs("thompson", "{max_horizon: 8}")
    with pytest.raises(ValueError, match="must be a JSON object"):
        registry.parse_allocator_kwargs("thompson", "[8]")


def test_bad_kwargs_name_the_real_parameters(env, plugin_module):
    with pytest.raises(TypeError, match=r"no parameter 'ofset'\. Did you mean 'offset'"):
        agents.make_allocator(f"{plugin_module}:FirstFeasible", env, ofset=1)


def test_known_allocators_in_errors_include_sb3_pretrained(env):
    with pytest.raises(ValueError, match=r"Known: .*sb3:pretrained") as info:
        agents.make_allocator("pretrained", env)
    assert "Did you mean 'sb3:pretrained'" in str(info.value)


def test_module_class_spec_from_the_working_directory(env, tmp_path, monkeypatch):
    # As under the `adaroll` console script: the working directory is not on sys.path.
    pkg = tmp_path / "adaroll_cwd_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(PLUGIN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path))])
    try:
        alloc = agents.make_allocator("adaroll_cwd_pkg.mod:FirstFeasible", env)
        assert alloc.name == "first_feasible"
    finally:
        for name in ("adaroll_cwd_pkg", "adaroll_cwd_pkg.mod"):
            sys.modules.pop(name, None)


def test_a_short_name_from_the_environment_builds_the_plugin(monkeypatch):
    import agents
    from agents.registry import ALIASES_ENV, display_name, env_aliases, list_allocators

    monkeypatch.setenv(
        ALIASES_ENV, "hot=agents.baselines:UniformAllocator, cold=agents.baselines:RandomAllocator"
    )
    assert env_aliases() == {"hot": "agents.baselines:UniformAllocator",
                             "cold": "agents.baselines:RandomAllocator"}  # fmt: skip
    assert {"hot", "cold"} <= set(list_allocators())
    from adaroll_env import AllocationParams

    alloc = agents.make_allocator("hot", AllocationParams(num_questions=4, budget=16))
    assert type(alloc).__name__ == "UniformAllocator"
    assert display_name("agents.baselines:RandomAllocator") == "random"  # its own name
    monkeypatch.setenv(ALIASES_ENV, "uniform=agents.baselines:RandomAllocator")
    with pytest.raises(ValueError, match="is a registered allocator"):
        env_aliases()
    monkeypatch.setenv(ALIASES_ENV, "oops")
    with pytest.raises(ValueError, match="must be name=module:Class"):
        env_aliases()
