import csv
import json

import numpy as np
import pytest

from agents.benchmarks import BenchConfig, episode_seeds, mean_ci, run_benchmark


def _cfg(tmp_path, **kw):
    base = dict(
        allocators="uniform,random",
        envs="sequential,rounds",
        num_questions=6,
        group_sizes="4",
        episodes=12,
        seed=7,
        workers=1,
        out=str(tmp_path),
        name="run",
        progress=False,
    )
    base.update(kw)
    return BenchConfig(**base)


def test_run_directory_and_rows(tmp_path):
    cfg = _cfg(tmp_path)
    res = run_benchmark(cfg)
    run = res.run_dir
    for f in (
        "config.json",
        "versions.json",
        "summary.json",
        "summary.csv",
        "episodes.csv",
        "table.md",
        "utility_bars.png",
    ):
        assert (run / f).is_file(), f
    assert json.loads((run / "config.json").read_text())["episodes"] == 12
    assert len(res.rows) == 4  # 2 envs x 2 allocators
    with (run / "episodes.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == 4 * 12
    for r in res.rows:
        if r["allocator"] == "uniform":
            assert r["gain"] == 0.0
        assert 0.0 <= r["mean_utility"] <= 6.0
        assert r["ci95"] > 0


def test_paired_and_reproducible_across_workers(tmp_path):
    one = run_benchmark(_cfg(tmp_path, workers=1), write=False)
    two = run_benchmark(_cfg(tmp_path, workers=2), write=False)
    key = lambda e: (e["setting"], e["allocator"], e["episode"])  # noqa: E731
    u1 = {key(e): e["utility"] for e in one.episodes}
    u2 = {key(e): e["utility"] for e in two.episodes}
    assert u1 == u2
    # Paired: the same episode index has the same env seed for every allocator.
    seeds = {}
    for e in one.episodes:
        seeds.setdefault((e["setting"], e["episode"]), set()).add(e["env_seed"])
    assert all(len(s) == 1 for s in seeds.values())


def test_gain_is_paired_difference(tmp_path):
    res = run_benchmark(_cfg(tmp_path, envs="rounds"), write=False)
    by = {}
    for e in res.episodes:
        by.setdefault(e["allocator"], {})[e["episode"]] = e["utility"]
    diff = [by["random"][i] - by["uniform"][i] for i in sorted(by["uniform"])]
    row = next(r for r in res.rows if r["allocator"] == "random")
    assert row["gain"] == pytest.approx(np.mean(diff))
    _, ci = mean_ci(diff)
    assert row["gain_ci95"] == pytest.approx(ci)


def test_episode_seeds_depend_on_master_and_index():
    assert episode_seeds(0, 1) == episode_seeds(0, 1)
    assert episode_seeds(0, 1) != episode_seeds(0, 2)
    assert episode_seeds(0, 1) != episode_seeds(1, 1)


def test_unknown_allocator_fails_before_running(tmp_path):
    with pytest.raises(ValueError, match="Did you mean 'random'"):
        run_benchmark(_cfg(tmp_path, allocators="randon"), write=False)


def test_budget_errors_surface(tmp_path):
    with pytest.raises(ValueError, match="pilot"):
        run_benchmark(_cfg(tmp_path, pilot=4, group_sizes="4"), write=False)


def test_exact_values_and_plots(tmp_path):
    cfg = _cfg(tmp_path, num_questions=2, group_sizes="2,3", envs="rounds", episodes=6)
    res = run_benchmark(cfg)
    for r in res.rows:
        if r["allocator"] == "uniform":
            assert r["exact_value"] is not None and 0 < r["exact_value"] <= 2
        else:  # random is stochastic: no single outcome tree
            assert r["exact_value"] is None
        assert len(r["rollouts_by_mean"]) == 10
        assert r["episodes_per_s"] > 0
    for f in ("utility_bars.png", "rollouts_by_mean.png", "utility_vs_group_size.png"):
        assert (res.run_dir / f).stat().st_size > 1000
    assert "exact value" in (res.run_dir / "table.md").read_text()


def test_exact_skipped_on_large_instances(tmp_path):
    res = run_benchmark(_cfg(tmp_path, num_questions=32, envs="rounds", episodes=3), write=False)
    assert all(r["exact_value"] is None for r in res.rows)


def test_plugin_spec_in_parallel_benchmark(tmp_path, monkeypatch):
    mod = tmp_path / "adaroll_bench_plugin.py"
    mod.write_text(
        "import numpy as np\n"
        "from agents import BaseAllocator\n"
        "from adaroll_env import split_round\n\n"
        "class Evenly(BaseAllocator):\n"
        "    '''Even split of each decision over the open questions.'''\n\n"
        "    name = 'evenly'\n\n"
        "    def allocate(self, obs):\n"
        "        b = self.beliefs(obs)\n"
        "        return split_round(np.ones(b.rollouts.size), b.round_size, b.capacity)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    res = run_benchmark(
        _cfg(tmp_path, allocators="uniform,adaroll_bench_plugin:Evenly", workers=2, envs="rounds"),
        write=False,
    )
    names = {r["allocator"] for r in res.rows}
    assert names == {"uniform", "adaroll_bench_plugin:Evenly"}


def test_allocator_kwargs_reach_the_allocators(tmp_path):
    # pilot_commit's pilot changes its decisions: the kwargs must reach every episode.
    kw = dict(allocators="pilot_commit", envs="rounds", num_questions=8, episodes=20)
    default = run_benchmark(_cfg(tmp_path, **kw), write=False)
    cfg = _cfg(tmp_path, allocator_kwargs='{"pilot_commit": {"pilot": 1}}', **kw)
    assert cfg.allocator_kwargs_of("pilot_commit") == {"pilot": 1}
    assert cfg.allocator_kwargs_of("uniform") == {}
    changed = run_benchmark(cfg, write=False)

    def mean(res):
        return next(r["mean_utility"] for r in res.rows if r["allocator"] == "pilot_commit")

    assert mean(changed) != mean(default)


@pytest.mark.parametrize(
    "script", ["bench_env.py", "bench_bamdp.py", "bench_sb3.py", "train_pretrained.py"]
)
def test_scripts_parse_without_the_trainer(script):
    # A script parses its config and calls a library main; none needs the trainer's CLI.
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[3]
    code = (
        "import runpy, sys; sys.modules['trainers'] = None; "
        f"sys.argv = [{script!r}, '--help']; "
        f"runpy.run_path({str(root / 'scripts' / script)!r}, run_name='__main__')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout


def test_common_outcomes_reach_the_envs(tmp_path):
    """``--outcomes common`` goes to every env the bench makes (other draws than the binomial
    stream's, the same on a rerun); an unknown value names the choices."""
    from agents.benchmarks.config import Setting, env_kwargs

    cfg = _cfg(tmp_path, envs="rounds", outcomes="common")
    assert env_kwargs(cfg, Setting("rounds", "rlvr", "snr(8)", 4))["outcomes"] == "common"
    assert "outcomes" not in env_kwargs(_cfg(tmp_path), Setting("rounds", "rlvr", "snr(8)", 4))

    def utilities(c):
        return [e["utility"] for e in run_benchmark(c, write=False).episodes]

    common = utilities(cfg)
    assert common == utilities(_cfg(tmp_path, envs="rounds", outcomes="common"))
    assert common != utilities(_cfg(tmp_path, envs="rounds"))
    with pytest.raises(ValueError, match=r"unknown outcomes 'crn'.*binomial, common"):
        _cfg(tmp_path, outcomes="crn")
