"""The allocation contract (``agents.check_allocation``), on every path that runs an allocator."""

import sys

import gymnasium as gym
import numpy as np
import pytest

import agents
from agents import AllocationError, AllocatorCheckError, check_allocation
from agents.benchmarks import BenchConfig, run_benchmark


def test_rules_and_numbers():
    ok = check_allocation("'x'", [1, 2, 0], round_size=3, spent=[0, 1, 4], caps=4)
    assert ok.dtype == np.int64 and ok.tolist() == [1, 2, 0]
    with pytest.raises(AllocationError, match=r"allocator 'x' .* dtype float64, expected integer"):
        check_allocation("'x'", np.array([1.0, 2.0, 0.0]), round_size=3, spent=[0, 0, 0], caps=4)
    with pytest.raises(AllocationError, match=r"negative at question 1 \(-1\)"):
        check_allocation("'x'", [4, -1, 0], round_size=3, spent=[0, 0, 0], caps=4)
    with pytest.raises(AllocationError, match=r"handed out 4 rollouts, .* = 3"):
        check_allocation("'x'", [2, 2, 0], round_size=3, spent=[0, 0, 0], caps=4)
    with pytest.raises(
        AllocationError,
        match=r"question 2 has already spent 3 rollouts and is asked for 2 more, beyond its cap "
        r"of 4 \(room for 1\)",
    ):
        check_allocation("'x'", [1, 0, 2], round_size=3, spent=[0, 0, 3], caps=4)
    with pytest.raises(AllocationError, match=r"shape \(2,\), expected \(3,\)"):
        check_allocation("'x'", [1, 2], round_size=3, spent=[0, 0, 0], caps=4)


PLUGIN = """
import numpy as np
from agents import BaseAllocator
from adaroll_env import split_round


class Even(BaseAllocator):
    '''Even split of each decision (a test plug-in).'''

    name = "even"

    def allocate(self, obs):
        b = self.beliefs(obs)
        return split_round(np.ones(b.rollouts.size), b.round_size, b.capacity)


class OverCap(Even):
    '''Everything to question 0, caps ignored.'''

    name = "over_cap"

    def allocate(self, obs):
        c = np.zeros(self.beliefs(obs).rollouts.size, dtype=np.int64)
        c[0] = self.beliefs(obs).round_size
        return c


class RoundPlusOne(Even):
    '''One rollout more than the round.'''

    name = "round_plus_one"

    def allocate(self, obs):
        c = super().allocate(obs)
        c[-1] += 1
        return c


class WholeFloats(Even):
    '''Right counts as a float array.'''

    name = "whole_floats"

    def allocate(self, obs):
        return super().allocate(obs).astype(np.float64)
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    (tmp_path / "adaroll_contract_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "adaroll_contract_plugin"
    sys.modules.pop("adaroll_contract_plugin", None)


def _bench(tmp_path, spec, **kw):
    base = dict(
        allocators=spec,
        envs="rounds",
        num_questions=4,
        group_sizes="4",
        episodes=3,
        workers=1,
        out=str(tmp_path),
        progress=False,
        exact=False,
        plots=False,
    )
    base.update(kw)
    return BenchConfig(**base)


def test_bench_refuses_an_over_cap_allocator(tmp_path, plugin):
    cfg = _bench(tmp_path, f"{plugin}:OverCap", max_group=5)
    with pytest.raises(
        AllocationError,
        match=r"allocator 'over_cap' \(OverCap\) .* question 0 has already spent \d+ rollouts "
        r"and is asked for \d+ more, beyond its cap of 5",
    ):
        run_benchmark(cfg, write=False)


def test_bench_refuses_round_plus_one(tmp_path, plugin):
    with pytest.raises(AllocationError, match=r"'round_plus_one' .* handed out 5 rollouts, .* = 4"):
        run_benchmark(_bench(tmp_path, f"{plugin}:RoundPlusOne"), write=False)


def test_one_rule_one_message_on_act_and_check_allocator(plugin):
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=4, budget=16)
    alloc = agents.make_allocator(f"{plugin}:WholeFloats", env, seed=0)
    obs, _ = env.reset(seed=0)
    with pytest.raises(AllocationError, match="dtype float64, expected integer") as on_act:
        alloc.act(obs)
    with pytest.raises(AllocatorCheckError, match="dtype float64, expected integer") as checked:
        agents.check_allocator(alloc, env)
    rule = str(on_act.value).split("contract: ")[1]
    assert str(checked.value).endswith(rule)


def test_predict_enforces_the_contract(plugin):
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=4, budget=16, max_group=5)
    alloc = agents.make_allocator(f"{plugin}:OverCap", env, seed=0)
    obs, _ = env.reset(seed=0)
    alloc.predict(obs)  # the first round fits under the cap of 5
    obs, *_ = env.step(alloc.act(obs))
    batch = {k: np.stack([v, v]) for k, v in obs.items()}
    with pytest.raises(AllocationError, match="beyond its cap of 5"):
        alloc.predict(batch)


def test_a_good_plugin_still_runs(tmp_path, plugin):
    res = run_benchmark(_bench(tmp_path, f"{plugin}:Even"), write=False)
    assert {r["allocator"] for r in res.rows} == {"uniform", f"{plugin}:Even"}


def test_adaroll_bench_exits_2_naming_the_broken_rule(tmp_path, plugin):
    # Through the command line: the error is printed, nothing is scored, exit status 2.
    import os
    import subprocess

    code = "import sys; from trainers.cli import main; sys.exit(main())"
    args = ["bench", "--allocators", f"uniform,{plugin}:RoundPlusOne", "--num-questions", "4"]
    args += ["--episodes", "3", "--workers", "1", "--out", str(tmp_path), "--no-progress"]
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "'round_plus_one' (RoundPlusOne) broke the allocation contract" in done.stderr
    assert "handed out 5 rollouts" in done.stderr
    assert not list(tmp_path.glob("bench-*"))
