"""Cloning ``bamdp``'s value curves instead of its counts: an offline check of a policy design.

Every clone tried for ``sb3:pretrained`` so far outputs one weight a question and lets the env
split the round in proportion; fitted to ``bamdp``'s counts (squared error) or to the value its
soft round gives up (``clone_by_value.py``), with DAgger, it keeps 92-95 % of ``bamdp``'s gain.
A weight per question has to encode the round's *price* — a quantity of the whole batch — in a
per-question number. ``bamdp`` itself decides a round from each question's value curve (the
expected continuation of giving it m of the round's rollouts, ``round_value_curves``), which
depends on the question's own state and the round, and splits the round by an exact
multiple-choice knapsack over the curves. This script checks whether a network that *predicts
the curves* and decodes the round by the same knapsack keeps the gain:

- data: ``bamdp``'s decisions on 600 episodes at B = 16 and 64 (``rlvr``, G = 8, rounds of B,
  ``snr(8)``; the settings and seeds of ``clone_by_value.py``);
- network: the shipped policy's permutation-equivariant layout (a question embedding from its
  own features, the batch's mean embedding and the context), with a head of ``M_MAX − 1``
  marginal values per question instead of one score; fitted by squared error to the curves'
  marginals (v[m] − v[m − 1], where both are finite), the shipped clone's optimiser and
  schedule (``clone_fit.fit``), no DAgger, no PPO;
- decoding: the predicted curves (0 at m = 0, the marginals summed) where the question may take
  m rollouts (the room rule ``bamdp`` applies: at most the round, its capacity and the tables'
  horizon; read here from ``bamdp``'s curves' finite entries, a function of the state alone),
  split by ``split_round_exact``.

Each fitted network then drives 2,000 paired episodes a B (master seed 5, as
``clone_by_value.py``), beside ``uniform`` and ``bamdp``; reported: its share of ``bamdp``'s
gain over ``uniform`` and its paired difference from ``bamdp``. Writes ``clone_curves.json``.
Not a shipped model: a design check for ``sb3:pretrained``, kept as it ran; the shipped form of
this design is ``agents.sb3.curves`` (the room read from the features, DAgger).

    python results/bamdp_rounds/clone_curves.py [--episodes 600] [--epochs 200] [--eval 2000]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from numpy.typing import NDArray
from torch import nn

import adaroll_env
from agents.bamdp.rounds import split_round_exact
from agents.benchmarks.runner import run_episodes
from agents.registry import make_allocator
from agents.sb3.features import N_CONTEXT, N_FEATURES, flat_features
from agents.sb3.imitation import curve_marginals
from results.bamdp_rounds.clone_by_value import EVAL_SEED, M_MAX, collect, drive_policy, make_env
from results.bamdp_rounds.clone_fit import SIZES, fit

#: held-out episodes of ``bamdp``'s states for the offline value lost (seeds 30,000 on)
HELD_OUT = 100


class CurveNet(nn.Module):
    """Per question ``M_MAX − 1`` marginal values from ``[e_i, mean_j e_j, context]``."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.num_questions = SIZES[0]
        self.embed = nn.Sequential(
            nn.Linear(N_FEATURES, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh()
        )
        self.head = nn.Sequential(
            nn.Linear(2 * hidden + N_CONTEXT, hidden), nn.Tanh(), nn.Linear(hidden, M_MAX - 1)
        )

    def scores(self, x: th.Tensor) -> th.Tensor:
        """``[batch, B, M_MAX − 1]`` predicted marginals (named as ``fit`` calls them)."""
        B = self.num_questions
        q, ctx = x[:, : B * N_FEATURES].reshape(-1, B, N_FEATURES), x[:, B * N_FEATURES :]
        e = self.embed(q)
        g = th.cat([e.mean(dim=1), ctx], dim=-1).unsqueeze(1).expand(-1, B, -1)
        return self.head(th.cat([e, g], dim=-1))  # type: ignore[no-any-return]


def marginals(v: NDArray[np.float64]) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
    """Curves ``[n, B, M_MAX]`` → marginals ``[n, B, M_MAX − 1]`` and where they are finite."""
    return curve_marginals(v, M_MAX - 1)


def train(data: dict[int, tuple[Any, ...]], epochs: int, hidden: int) -> tuple[CurveNet, float]:
    """The network fitted to every B's marginals; returns it and the marginals' scale."""
    th.manual_seed(0)
    gen = th.Generator().manual_seed(0)
    net = CurveNet(hidden)
    tensors, pooled = {}, []
    for b, (x, _, v) in data.items():
        d, ok = marginals(v)
        pooled.append(d[ok])
        tensors[b] = (th.as_tensor(x), th.as_tensor(d), th.as_tensor(ok))
    scale = float(np.concatenate(pooled).std())

    def loss(_b: int, pred: th.Tensor, rows: tuple[th.Tensor, ...]) -> th.Tensor:
        _, d, ok = rows
        err = (pred - d / scale) ** 2
        return (err * ok).sum() / ok.sum().clamp(min=1)

    fit(net, tensors, epochs, loss, gen)  # type: ignore[arg-type]
    return net, scale


def decide(net: CurveNet, x: NDArray[np.float32], room: NDArray[np.bool_], R: int) -> Any:
    """The round's counts: the predicted curves where the question may take m, split exactly."""
    with th.no_grad():
        d = net.scores(th.as_tensor(x)[None])[0].numpy().astype(np.float64)
    curves = np.concatenate([np.zeros((d.shape[0], 1)), np.cumsum(d, axis=1)], axis=1)
    return split_round_exact(np.where(room, curves, -np.inf), R)


def value_lost(
    choose: Callable[[int, NDArray[np.float64], int], NDArray[np.int64]],
    num_questions: int,
    data: tuple[Any, ...],
) -> float:
    """Mean over decisions of the value a round ``choose(k, curves, R)`` gives up against
    ``bamdp``'s on ``bamdp``'s own states (the true curves at the two rounds' counts), times the
    decisions of an episode: the utility an episode would lose if every decision were made from
    the expert's state (a low-noise offline measure)."""
    _, c, v = data
    lost = []
    for k in range(len(c)):
        got = np.asarray(choose(k, v[k], int(c[k].sum())), dtype=np.int64)
        best = v[k][np.arange(num_questions), c[k]].sum()
        lost.append(best - v[k][np.arange(num_questions), np.minimum(got, M_MAX - 1)].sum())
    per_episode = len(c) / HELD_OUT
    return float(np.mean(lost) * per_episode)


def shipped_value_lost(num_questions: int, seed: int) -> float:
    """``value_lost`` of the shipped ``sb3:pretrained`` on the held-out states (replayed:
    the same episodes as ``collect``, ``bamdp`` deciding the state, the shipped model the round
    scored against it)."""
    env = make_env(num_questions)
    expert = make_allocator("bamdp", env)
    shipped = make_allocator("sb3:pretrained", env)
    lost = []
    for ep in range(HELD_OUT):
        obs, _ = env.reset(seed=seed + ep)
        done = False
        while not done:
            v = np.full((num_questions, M_MAX), -np.inf)
            got = expert.round_value_curves(obs)  # type: ignore[attr-defined]
            v[:, : min(got.shape[1], M_MAX)] = got[:, :M_MAX]
            counts = np.asarray(expert.allocate(obs), dtype=np.int64)
            mine = np.asarray(shipped.allocate(obs), dtype=np.int64)
            rows = np.arange(num_questions)
            lost.append(v[rows, counts].sum() - v[rows, np.minimum(mine, M_MAX - 1)].sum())
            obs, _, terminated, truncated, _ = env.step(adaroll_env.encode_counts(counts))
            done = bool(terminated or truncated)
    return float(np.sum(lost) / HELD_OUT)


def drive(
    net: CurveNet, num_questions: int, episodes: int, outcomes: str = "binomial"
) -> NDArray[np.float64]:
    """Utility of the network's episodes, paired with ``run_episodes``' (same env seeds)."""
    rule = make_allocator("bamdp", make_env(num_questions))  # only for the room rule
    net.num_questions = num_questions

    def choose(params: Any, obs: dict[str, Any]) -> NDArray[np.float32]:
        got = rule.round_value_curves(obs)  # type: ignore[attr-defined]
        room = np.zeros((num_questions, M_MAX), dtype=bool)
        room[:, : min(got.shape[1], M_MAX)] = np.isfinite(got[:, :M_MAX])
        R = int(min(params.round_size, float(obs["budget_left"][0])))
        counts = decide(net, flat_features(params, obs), room, R)
        return adaroll_env.encode_counts(counts)  # type: ignore[no-any-return]

    reset = lambda p: rule.reset(p, seed=0)  # noqa: E731
    return drive_policy(choose, num_questions, episodes, reset, outcomes)


def main() -> None:
    """Collect, fit, drive paired episodes, print and write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--episodes", type=int, default=600, help="training episodes per B (600)")
    ap.add_argument("--epochs", type=int, default=200, help="passes over the data (200)")
    ap.add_argument("--eval", type=int, default=2000, help="paired episodes per B (2000)")
    ap.add_argument("--hidden", type=int, default=64, help="network width (64, the shipped one)")
    ap.add_argument("--out", default="clone_curves.json", help="JSON name beside this file")
    ap.add_argument("--outcomes", default="binomial", choices=["binomial", "common"],
                    help="the env's outcomes for the driven episodes (binomial, the default; "
                    "common: common random numbers, so the pairing survives a different "
                    "allocation)")  # fmt: skip
    args = ap.parse_args()
    th.set_num_threads(1)
    data = {b: collect(b, args.episodes, 20_000) for b in SIZES}
    held = {b: collect(b, HELD_OUT, 30_000) for b in SIZES}
    net, scale = train(data, args.epochs, args.hidden)
    rows = []
    for b in SIZES:
        net.num_questions = b
        x_held = held[b][0]

        def by_net(k: int, v: NDArray[np.float64], R: int, x: Any = x_held) -> NDArray[np.int64]:
            return decide(net, x[k], np.isfinite(v), R)  # type: ignore[no-any-return]

        lost = value_lost(by_net, b, held[b])
        lost_shipped = shipped_value_lost(b, 30_000)
        env = make_env(b, args.outcomes)
        u, e = (np.array([r["utility"] for r in run_episodes(env, spec, range(args.eval),
                                                             EVAL_SEED)])
                for spec in ("uniform", "bamdp"))  # fmt: skip
        s = drive(net, b, args.eval, args.outcomes)
        diff = s - e
        rows.append({
            "num_questions": b,
            "offline_value_lost_per_episode": lost,
            "offline_value_lost_per_episode_shipped_sb3": lost_shipped,
            "share_of_bamdp_gain": float((s - u).mean() / (e - u).mean()),
            "bamdp_gain": float((e - u).mean()),
            "minus_bamdp": float(diff.mean()),
            "minus_bamdp_ci95": float(1.96 * diff.std(ddof=1) / np.sqrt(len(diff))),
        })  # fmt: skip
    print("| B | offline value lost / episode (share of bamdp's gain) | the same, shipped "
          "sb3:pretrained | share of bamdp's gain | curves − bamdp (95 % CI) |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        off, ship = (
            r["offline_value_lost_per_episode"],
            r["offline_value_lost_per_episode_shipped_sb3"],
        )
        print(f"| {r['num_questions']} | {off:.4f} ({100 * off / r['bamdp_gain']:.1f} %) | "
              f"{ship:.4f} ({100 * ship / r['bamdp_gain']:.1f} %) | "
              f"{100 * r['share_of_bamdp_gain']:.1f} % | "
              f"{r['minus_bamdp']:+.4f} ± {r['minus_bamdp_ci95']:.4f} |")  # fmt: skip
    path = Path(__file__).with_name(args.out)
    meta = {"episodes": args.episodes, "epochs": args.epochs, "eval_episodes": args.eval,
            "eval_master_seed": EVAL_SEED, "marginal_scale": scale, "hidden": args.hidden,
            "held_out_episodes": HELD_OUT}  # fmt: skip
    if args.outcomes != "binomial":
        meta["outcomes"] = args.outcomes
    path.write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")
    print(f"written: {path}")


if __name__ == "__main__":
    main()
