"""How precisely the equivariant scorer can fit ``bamdp``'s rounds, offline (no PPO, no DAgger).

``bamdp`` drives episodes of the rounds env (``rlvr``, G = 8, rounds of B, ``snr(8)``) at B = 16
and 64; its decisions on ``--episodes`` of them are the training data, its decisions on 100 more
(seeds 90,000 and up, which nothing else uses) the held-out data. The shipped policy's scorer
(``agents.sb3.policy.QuestionScorer``, width 64) is fitted to them with the shipped clone's loss,
optimiser and schedule (``agents.sb3.imitation``: squared error to 2c/K − 1, a hinge below −1 for
questions left out, Adam with a cosine decay, batches of one size each) for ``--epochs`` passes,
in three recipes:

- ``shipped``: the expert's counts as it gives them, the features of version 2;
- ``canonical``: within each group of questions in the same state (exchangeable questions),
  the expert's counts handed out from the group's first question down;
- ``canonical+B``: that, and log2(B)/6 appended to the batch context.

Reported per recipe and B: the share of a round's rollouts that the fitted scorer, decoded as
the env decodes an action, places otherwise than ``bamdp`` (half the L1 distance of the counts
over the round), on the held-out and on the training decisions, the latter also with the
questions of one state taken as exchangeable. Writes ``clone_fit.json`` beside this file.

    python results/bamdp_rounds/clone_fit.py [--episodes 600] [--epochs 200]
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from numpy.typing import NDArray

import adaroll_env
from adaroll_env.actions import split_round
from agents.registry import make_allocator
from agents.sb3.features import N_CONTEXT, N_FEATURES, flat_features
from agents.sb3.imitation import ZERO_MARGIN
from agents.sb3.policy import QuestionScorer

SIZES = (16, 64)
Data = tuple[NDArray[np.float32], NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]


def collect(num_questions: int, episodes: int, seed: int) -> Data:
    """``(features, expert counts, capacity, state keys)`` of every decision, one row each."""
    gym.register_envs(adaroll_env)
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=num_questions,
                   budget=8 * num_questions, difficulty="rlvr", utility="snr(8)")  # fmt: skip
    params = env.unwrapped.params  # type: ignore[attr-defined]
    expert = make_allocator("bamdp", env)
    xs, cs, caps, keys = [], [], [], []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        done = False
        while not done:
            counts = np.asarray(expert.allocate(obs), dtype=np.int64)
            xs.append(flat_features(params, obs))
            cs.append(counts)
            caps.append(params.cap - obs["rollouts"].astype(np.int64))
            # one number per state: the posterior and the rollouts so far
            keys.append(obs["alpha"] * 1e6 + obs["beta"] * 1e3 + obs["rollouts"])
            obs, _, terminated, truncated, _ = env.step(adaroll_env.encode_counts(counts))
            done = bool(terminated or truncated)
    return np.stack(xs), np.stack(cs), np.stack(caps), np.stack(keys).astype(np.float64)


def canonical(counts: NDArray[np.int64], keys: NDArray[np.float64]) -> NDArray[np.int64]:
    """Each state's counts handed out from its first question down (rows are decisions)."""
    out = counts.copy()
    for i in range(len(counts)):
        for k in np.unique(keys[i]):
            members = np.flatnonzero(keys[i] == k)
            out[i, members] = np.sort(counts[i, members])[::-1]
    return out


def with_b(x: NDArray[np.float32], num_questions: int) -> NDArray[np.float32]:
    """The features with log2(B)/6 appended to the context."""
    col = np.full((len(x), 1), math.log2(num_questions) / 6.0, dtype=np.float32)
    return np.concatenate([x, col], axis=1)


def misplaced(
    pred: NDArray[np.int64], want: NDArray[np.int64], keys: NDArray[np.float64] | None = None
) -> float:
    """Mean share of a round's rollouts placed otherwise (with ``keys``: sorted within states)."""
    if keys is not None:
        pred, want = canonical(pred, keys), canonical(want, keys)
    return float(np.mean(np.abs(pred - want).sum(axis=1) / 2 / want.sum(axis=1)))


Loss = Callable[[int, th.Tensor, tuple[th.Tensor, ...]], th.Tensor]


def squared_error(scale: int) -> Loss:
    """The shipped clone's loss (``agents.sb3.imitation``): squared error of the scores to
    2c/K − 1 (K = ``scale``; ``rows[1]`` holds the counts c), a hinge below −1 for questions
    left out."""

    def loss(b: int, mean: th.Tensor, rows: tuple[th.Tensor, ...]) -> th.Tensor:
        target = th.clamp(2.0 * rows[1] / scale - 1.0, max=1.0)
        hinge = th.clamp(mean + 1.0 + ZERO_MARGIN, min=0.0)
        return th.where(target <= -1.0, hinge, mean - target).pow(2).mean()

    return loss


def fit(
    scorer: QuestionScorer,
    tensors: dict[int, tuple[th.Tensor, ...]],
    epochs: int,
    loss_of: Loss,
    gen: th.Generator,
) -> None:
    """The shipped clone's optimiser and schedule (``agents.sb3.imitation``): Adam at 1e-3 with
    a cosine decay to 0, batches of 256 decisions of one B each, shuffled together; ``tensors[b]``
    holds the features first, ``loss_of(b, scores, rows)`` the loss of a batch's rows."""
    opt = th.optim.Adam(scorer.parameters(), lr=1e-3)
    batch = 256
    steps = epochs * sum(-(-len(t[0]) // batch) for t in tensors.values())
    sched = th.optim.lr_scheduler.LambdaLR(
        opt, lambda k: 0.5 * (1.0 + math.cos(math.pi * min(k, steps) / steps))
    )
    for _ in range(epochs):
        batches = []
        for b, t in tensors.items():
            order = th.randperm(len(t[0]), generator=gen)
            batches += [(b, order[i : i + batch]) for i in range(0, len(order), batch)]
        for j in th.randperm(len(batches), generator=gen).tolist():
            b, idx = batches[j]
            rows = tuple(t[idx] for t in tensors[b])
            scorer.num_questions = b
            loss = loss_of(b, scorer.scores(rows[0]), rows)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()


def fit_and_measure(
    recipe: str, train: dict[int, Data], test: dict[int, Data], epochs: int
) -> dict[str, Any]:
    """Fit one recipe's scorer, return its misplaced shares."""
    th.manual_seed(0)
    gen = th.Generator().manual_seed(0)

    def prep(b: int, d: Data) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
        x, c, _, keys = d
        if recipe != "shipped":
            c = canonical(c, keys)
        return (with_b(x, b) if recipe == "canonical+B" else x), c

    n_context = N_CONTEXT + (1 if recipe == "canonical+B" else 0)
    scorer = QuestionScorer(SIZES[0], n_features=N_FEATURES, n_context=n_context, hidden=64)
    th.nn.init.orthogonal_(scorer.score[-1].weight, gain=0.01)
    tr = {b: prep(b, d) for b, d in train.items()}
    scale = max(int(c.max()) for _, c in tr.values())
    tensors = {b: (th.as_tensor(x), th.as_tensor(c)) for b, (x, c) in tr.items()}
    fit(scorer, tensors, epochs, squared_error(scale), gen)

    def scores(b: int, x: th.Tensor) -> th.Tensor:
        scorer.num_questions = b
        return scorer.scores(x)

    def decoded(b: int, d: Data) -> NDArray[np.int64]:
        x, c, cap, _ = d
        x = with_b(x, b) if recipe == "canonical+B" else x
        with th.no_grad():
            w = (np.clip(scores(b, th.as_tensor(x)).numpy(), -1.0, 1.0) + 1.0) / 2.0
        return np.stack([split_round(w[i], int(c[i].sum()), cap[i]) for i in range(len(c))])

    out: dict[str, Any] = {"recipe": recipe}
    for b in SIZES:
        held, trained = decoded(b, test[b]), decoded(b, train[b])
        want_test, want_train = prep(b, test[b])[1], tr[b][1]
        out[f"held_out_b{b}"] = misplaced(held, want_test)
        out[f"train_b{b}"] = misplaced(trained, want_train)
        out[f"held_out_exchangeable_b{b}"] = misplaced(held, test[b][1], test[b][3])
    return out


def main() -> None:
    """Collect, fit the three recipes, print and write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--episodes", type=int, default=600, help="training episodes per B (600)")
    ap.add_argument("--epochs", type=int, default=200, help="passes over the data (200)")
    args = ap.parse_args()
    th.set_num_threads(1)
    train = {b: collect(b, args.episodes, 20_000) for b in SIZES}
    test = {b: collect(b, 100, 90_000) for b in SIZES}
    recipes = ("shipped", "canonical", "canonical+B")
    rows = [fit_and_measure(r, train, test, args.epochs) for r in recipes]
    cols = ("held_out_b16", "held_out_b64", "train_b64", "held_out_exchangeable_b64")
    print("| recipe | held-out B=16 | held-out B=64 | training B=64 | held-out B=64, exch. |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print("| " + " | ".join([r["recipe"], *(f"{100 * r[c]:.1f} %" for c in cols)]) + " |")
    path = Path(__file__).with_name("clone_fit.json")
    meta = {"episodes": args.episodes, "epochs": args.epochs, "held_out_episodes": 100}
    path.write_text(json.dumps({**meta, "recipes": rows}, indent=2) + "\n")
    print(f"written: {path}")


if __name__ == "__main__":
    main()
