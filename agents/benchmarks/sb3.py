"""The SB3 report behind ``scripts/bench_sb3.py``: numbers for the learned (SB3) allocators,
quality against ``bamdp`` and training throughput.

Quality: paired episodes (``agents.benchmarks``: the same true pass rates for every allocator in
an episode) of ``uniform``, ``bamdp`` and the learned models, in

1. the trained setting (rounds env, rlvr, B = 16, G = 8, R = B), the equivariant model and,
   when given, the MLP baseline;
2. the same model at another B (default 64): the equivariant policy rebuilt for that shape;
3. the sequential env (B = 16), when a sequential model is given.

For each learned allocator: its gain over ``uniform`` and the ratio of that gain to ``bamdp``'s,
with a 95 % paired bootstrap CI. Throughput: PPO training steps/s with the equivariant policy,
single env and vectorised (Dummy and Subproc VecEnvs).

    python scripts/bench_sb3.py --episodes 2000 \
        [--baseline runs/mlp/model.zip] [--seq-model runs/seq/model.zip]
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from adaroll_env.stats import mean_ci
from agents.benchmarks.config import BenchConfig
from agents.benchmarks.runner import run_benchmark


@dataclass
class BenchSB3Config:
    """Configuration of ``scripts/bench_sb3.py``."""

    model: str = field(
        default="pretrained", metadata={"help": "the learned rounds model (sb3:<this>)"}
    )
    baseline: str = field(default="", metadata={"help": "an MLP baseline model zip ('': none)"})
    seq_model: str = field(default="", metadata={"help": "a sequential-env model zip ('': none)"})
    utility: str = field(
        default="snr(8)", metadata={"help": "the utility the model was trained for"}
    )
    episodes: int = field(default=2000, metadata={"help": "paired episodes per setting"})
    seed: int = field(default=0, metadata={"help": "master seed"})
    workers: int = field(default=2, metadata={"help": "worker processes"})
    other_b: int = field(default=64, metadata={"help": "the other B the model is tried at"})
    throughput_steps: int = field(
        default=16_384, metadata={"help": "PPO steps per throughput row (0: skip)"}
    )
    outcomes: str = field(
        default="binomial",
        metadata={
            "help": "the envs' outcomes: binomial (the default) or common (common random "
            "numbers: the learned model and bamdp stay paired where their allocations differ)"
        },
    )
    out: str = field(default="runs", metadata={"help": "folder of the run directory"})
    name: str = field(default="bench-sb3", metadata={"help": "run directory name"})


def paired(env: str, b: int, specs: list[str], cfg: BenchSB3Config) -> dict[str, np.ndarray]:
    """Per-episode utilities of each spec (episode order aligned)."""
    bench = BenchConfig(
        allocators=",".join(specs),
        envs=env,
        num_questions=b,
        group_sizes="8",
        utilities=cfg.utility,
        episodes=cfg.episodes,
        seed=cfg.seed,
        workers=cfg.workers,
        exact=False,
        plots=False,
        outcomes=cfg.outcomes,
    )
    res = run_benchmark(bench, write=False)
    out: dict[str, dict[int, float]] = {}
    for rec in res.episodes:
        out.setdefault(rec["allocator"], {})[rec["episode"]] = rec["utility"]
    return {k: np.array([v[i] for i in sorted(v)]) for k, v in out.items()}


def gain_ratio(
    u: dict[str, np.ndarray], spec: str, rng: np.random.Generator, boot: int = 2000
) -> dict[str, Any]:
    """Gain of ``spec`` over uniform, bamdp's gain, their ratio with a paired bootstrap CI."""
    d_l = u[spec] - u["uniform"]
    d_b = u["bamdp"] - u["uniform"]
    idx = rng.integers(0, d_l.size, size=(boot, d_l.size))
    ratios = d_l[idx].mean(axis=1) / d_b[idx].mean(axis=1)
    gl, gl_ci = mean_ci(d_l)
    gb, gb_ci = mean_ci(d_b)
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return {
        "allocator": spec,
        "uniform": float(u["uniform"].mean()),
        "bamdp": float(u["bamdp"].mean()),
        "learned": float(u[spec].mean()),
        "gain": gl,
        "gain_ci": gl_ci,
        "bamdp_gain": gb,
        "bamdp_gain_ci": gb_ci,
        "ratio": gl / gb,
        "ratio_lo": float(lo),
        "ratio_hi": float(hi),
        "episodes": int(d_l.size),
    }


def throughput(steps: int) -> list[dict[str, Any]]:
    """PPO (equivariant policy, ppo.yml settings) training env steps/s per VecEnv layout."""
    import torch as th
    from stable_baselines3 import PPO

    from agents.sb3.policy import EquivariantActorCriticPolicy
    from agents.sb3.train import load_hyperparams, make_vec

    th.set_num_threads(1)
    env_id = "AdaRoll/BetaBernoulliRounds-v0"
    hp = load_hyperparams("ppo", env_id)
    kw = {"num_questions": 16, "budget": 128, "difficulty": "rlvr"}
    rows = []
    for n_envs, vec in ((1, "dummy"), (8, "dummy"), (2, "subproc"), (8, "subproc")):
        venv = make_vec(env_id, kw, n_envs=n_envs, seed=0, vec_env=vec)
        model = PPO(
            EquivariantActorCriticPolicy,
            venv,
            n_steps=max(512 // n_envs, 8),
            batch_size=256,
            n_epochs=hp["n_epochs"],
            gamma=1.0,
            device="cpu",
            seed=0,
            policy_kwargs=hp["policy_kwargs"],
        )
        t0 = time.perf_counter()
        model.learn(steps)
        dt = time.perf_counter() - t0
        venv.close()
        # Env stepping alone (random actions), for scale.
        venv = make_vec(env_id, kw, n_envs=n_envs, seed=0, vec_env=vec)
        venv.reset()
        acts = np.zeros((n_envs, 16), dtype=np.float32)
        t1 = time.perf_counter()
        k = 0
        while k < steps:
            venv.step(acts)
            k += n_envs
        dt_env = time.perf_counter() - t1
        venv.close()
        rows.append(
            {
                "n_envs": n_envs,
                "vec_env": vec,
                "train_steps_per_s": model.num_timesteps / dt,
                "env_steps_per_s": k / dt_env,
            }
        )
    return rows


def main(cfg: BenchSB3Config) -> dict[str, Any]:
    """Run the quality and throughput parts, print their tables and write ``bench_sb3.json``."""
    rng = np.random.default_rng(cfg.seed)
    model = f"sb3:{cfg.model}"
    report: dict[str, Any] = {"config": asdict(cfg), "quality": [], "throughput": []}
    specs = ["uniform", "bamdp", model] + ([f"sb3:{cfg.baseline}"] if cfg.baseline else [])
    u = paired("rounds", 16, specs, cfg)
    for s in specs[2:]:
        report["quality"].append({"setting": "rounds B=16 (trained)", **gain_ratio(u, s, rng)})
    u = paired("rounds", cfg.other_b, ["uniform", "bamdp", model], cfg)
    report["quality"].append(
        {"setting": f"rounds B={cfg.other_b} (trained at 16)", **gain_ratio(u, model, rng)}
    )
    if cfg.seq_model:
        seq = f"sb3:{cfg.seq_model}"
        u = paired("sequential", 16, ["uniform", "bamdp", seq], cfg)
        report["quality"].append({"setting": "sequential B=16", **gain_ratio(u, seq, rng)})
    if cfg.throughput_steps > 0:
        report["throughput"] = throughput(cfg.throughput_steps)

    print(
        f"| setting (rlvr, G=8, {cfg.utility}) | allocator | uniform | bamdp | learned "
        "| bamdp gain ± CI | learned gain ± CI | learned / bamdp gain [95% CI] |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in report["quality"]:
        print(
            f"| {r['setting']} | {r['allocator']} | {r['uniform']:.3f} | {r['bamdp']:.3f} | "
            f"{r['learned']:.3f} | {r['bamdp_gain']:+.3f} ± {r['bamdp_gain_ci']:.3f} | "
            f"{r['gain']:+.3f} ± {r['gain_ci']:.3f} | {100 * r['ratio']:.1f}% "
            f"[{100 * r['ratio_lo']:.1f}, {100 * r['ratio_hi']:.1f}] |"
        )
    if report["throughput"]:
        print("\n| VecEnv | n_envs | PPO training env steps/s | env steps/s alone |")
        print("|---|---|---|---|")
        for t in report["throughput"]:
            print(
                f"| {t['vec_env']} | {t['n_envs']} | {t['train_steps_per_s']:.0f} | "
                f"{t['env_steps_per_s']:.0f} |"
            )
    out = Path(cfg.out) / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_sb3.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwritten: {out / 'bench_sb3.json'}")
    return report
