"""Cloning ``bamdp`` by the value it loses instead of by squared error: an offline comparison.

``clone_fit.py`` found the shipped clone underfitting and weighing every misplaced rollout alike,
while the utility depends on *which* rollouts move. ``bamdp`` decides a round from each
question's value curve — the expected continuation of giving it m of the round's rollouts,
E_m[W] under its rounds plan — and splits the round to maximise their sum. Those curves price
every deviation, so a clone can be fitted to them: its round, decoded softly as the env decodes
an action (R·w/Σw with w = (a + 1)/2), loses Σ_i E_{c*_i}[W_i] − Σ_i E_{ĉ_i}[W_i] (linear between
integer m) against the expert's counts c*. Two recipes on the same data (the expert's decisions
on 600 episodes at B = 16 and 64, ``rlvr``, G = 8, rounds of B, ``snr(8)``), network, optimiser
and epochs (``clone_fit.fit``), without DAgger or PPO:

- ``squared error``: the shipped clone's loss (2c/K − 1, a hinge below −1 for questions left out);
- ``value regret``: the value lost, as above (now ``adaroll train-sb3 --clone-loss value``, with
  DAgger; this script keeps the offline comparison that led to it).

Each fitted scorer then *drives* 2,000 paired episodes a B (master seed 5, which no benchmark or
selection uses) beside ``uniform`` and ``bamdp``; reported: its share of ``bamdp``'s gain over
``uniform`` and its paired difference from ``bamdp`` with a 95 % interval. The value curves come
from ``BAMDPAllocator.round_value_curves``. Writes ``clone_by_value.json`` beside this file.

    python results/bamdp_rounds/clone_by_value.py [--episodes 600] [--epochs 200] [--eval 2000]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from numpy.typing import NDArray

import adaroll_env
from agents.benchmarks.runner import episode_seeds, run_episodes
from agents.registry import make_allocator
from agents.sb3.features import flat_features
from agents.sb3.imitation import _flat_past_top, _value_lost
from agents.sb3.policy import QuestionScorer
from results.bamdp_rounds.clone_fit import SIZES, fit, squared_error

#: value-curve columns kept (m = 0..16: more than any round of these settings gives a question)
M_MAX = 17
EVAL_SEED = 5
Data = tuple[NDArray[np.float32], NDArray[np.int64], NDArray[np.float64]]


def make_env(num_questions: int, outcomes: str = "binomial") -> gym.Env:  # type: ignore[type-arg]
    """The rounds env of these settings at B (``outcomes``: the env's argument)."""
    gym.register_envs(adaroll_env)
    return gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=num_questions,
                    budget=8 * num_questions, difficulty="rlvr", utility="snr(8)",
                    outcomes=outcomes)  # fmt: skip


def collect(num_questions: int, episodes: int, seed: int) -> Data:
    """``(features, expert counts, value curves [n, B, M_MAX])`` of every decision."""
    env = make_env(num_questions)
    params = env.unwrapped.params  # type: ignore[attr-defined]
    expert = make_allocator("bamdp", env)
    xs, cs, vs = [], [], []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        done = False
        while not done:
            got = expert.round_value_curves(obs)  # type: ignore[attr-defined]
            if got is None:
                raise RuntimeError("bamdp decided a round without its value curves")
            counts = np.asarray(expert.allocate(obs), dtype=np.int64)
            v = np.full((num_questions, M_MAX), -np.inf)
            v[:, : min(got.shape[1], M_MAX)] = got[:, :M_MAX]
            xs.append(flat_features(params, obs))
            cs.append(counts)
            vs.append(v)
            obs, _, terminated, truncated, _ = env.step(adaroll_env.encode_counts(counts))
            done = bool(terminated or truncated)
    return np.stack(xs), np.stack(cs), np.stack(vs)


def train(recipe: str, data: dict[int, Data], epochs: int) -> QuestionScorer:
    """One recipe's scorer fitted to the data."""
    th.manual_seed(0)
    gen = th.Generator().manual_seed(0)
    scorer = QuestionScorer(SIZES[0], hidden=64)
    th.nn.init.orthogonal_(scorer.score[-1].weight, gain=0.01)
    scale = max(int(c.max()) for _, c, _ in data.values())
    tensors = {}
    for b, (x, c, v) in data.items():
        curves = th.as_tensor(_flat_past_top(v))
        ct = th.as_tensor(c)
        tensors[b] = (th.as_tensor(x), ct, curves)

    def value_regret(b: int, mean: th.Tensor, rows: tuple[th.Tensor, ...]) -> th.Tensor:
        return _value_lost(mean, rows[1], rows[2])

    loss = squared_error(scale) if recipe == "squared error" else value_regret
    fit(scorer, tensors, epochs, loss, gen)
    return scorer


def drive_policy(
    choose: Callable[[Any, dict[str, Any]], NDArray[Any]],
    num_questions: int,
    episodes: int,
    on_reset: Callable[[Any], None] | None = None,
    outcomes: str = "binomial",
) -> NDArray[np.float64]:
    """Utility of the episodes ``choose(params, obs) -> action`` plays, paired with
    ``run_episodes``' (the same env seeds); ``on_reset(params)`` runs at each episode's start."""
    env = make_env(num_questions, outcomes)
    params = env.unwrapped.params  # type: ignore[attr-defined]
    out = []
    for i in range(episodes):
        obs, _ = env.reset(seed=episode_seeds(EVAL_SEED, i)[0])
        if on_reset is not None:
            on_reset(params)
        done, total = False, 0.0
        while not done:
            obs, reward, terminated, truncated, _ = env.step(choose(params, obs))
            total += float(reward)
            done = bool(terminated or truncated)
        out.append(total)
    return np.asarray(out)


def drive(scorer: QuestionScorer, num_questions: int, episodes: int) -> NDArray[np.float64]:
    """Utility of the scorer's episodes, paired with ``run_episodes``' (same env seeds)."""
    scorer.num_questions = num_questions

    def choose(params: Any, obs: dict[str, Any]) -> NDArray[np.float32]:
        with th.no_grad():
            x = th.as_tensor(flat_features(params, obs))[None]
            return np.clip(scorer.scores(x)[0].numpy(), -1.0, 1.0).astype(np.float32)

    return drive_policy(choose, num_questions, episodes)


def main() -> None:
    """Collect, fit both recipes, drive paired episodes, print and write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--episodes", type=int, default=600, help="training episodes per B (600)")
    ap.add_argument("--epochs", type=int, default=200, help="passes over the data (200)")
    ap.add_argument("--eval", type=int, default=2000, help="paired episodes per B (2000)")
    args = ap.parse_args()
    th.set_num_threads(1)
    data = {b: collect(b, args.episodes, 20_000) for b in SIZES}
    base = {}
    for b in SIZES:
        env = make_env(b)
        base[b] = {spec: np.array([r["utility"] for r in
                                   run_episodes(env, spec, range(args.eval), EVAL_SEED)])
                   for spec in ("uniform", "bamdp")}  # fmt: skip
    rows = []
    for recipe in ("squared error", "value regret"):
        scorer = train(recipe, data, args.epochs)
        for b in SIZES:
            u, e, s = base[b]["uniform"], base[b]["bamdp"], drive(scorer, b, args.eval)
            diff = s - e
            rows.append({
                "recipe": recipe, "num_questions": b,
                "share_of_bamdp_gain": float((s - u).mean() / (e - u).mean()),
                "bamdp_gain": float((e - u).mean()),
                "minus_bamdp": float(diff.mean()),
                "minus_bamdp_ci95": float(1.96 * diff.std(ddof=1) / np.sqrt(len(diff))),
            })  # fmt: skip
    print("| recipe | B | share of bamdp's gain | learned − bamdp (95 % CI) |")
    print("|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['recipe']} | {r['num_questions']} | {100 * r['share_of_bamdp_gain']:.1f} % | "
              f"{r['minus_bamdp']:+.4f} ± {r['minus_bamdp_ci95']:.4f} |")  # fmt: skip
    path = Path(__file__).with_name("clone_by_value.json")
    meta = {"episodes": args.episodes, "epochs": args.epochs, "eval_episodes": args.eval,
            "eval_master_seed": EVAL_SEED}  # fmt: skip
    path.write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")
    print(f"written: {path}")


if __name__ == "__main__":
    main()
