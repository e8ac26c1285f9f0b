"""Where ``sb3:pretrained`` places a round's rollouts differently from ``bamdp``.

For each B, episodes of the rounds env (``rlvr``, G = 8, rounds of B, ``snr(8)``) driven by the
shipped model; at every decision ``bamdp`` is asked what it would do in the same state, and the
share of the round's rollouts the two place differently (half the L1 distance of the counts,
over the round) is recorded per round. Episode seeds 5,000 and up (no benchmark or selection
uses them). Writes ``clone_disagreement.json`` beside this file.

    python results/bamdp_rounds/clone_disagreement.py [--episodes 100]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import gymnasium as gym
import numpy as np

import adaroll_env
from agents.registry import make_allocator


def measure(num_questions: int, episodes: int) -> dict[str, object]:
    """Per-round mean disagreement (share of the round's rollouts) at one B."""
    gym.register_envs(adaroll_env)
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=num_questions,
                   budget=8 * num_questions, difficulty="rlvr", utility="snr(8)")  # fmt: skip
    expert = make_allocator("bamdp", env)
    learned = make_allocator("sb3:pretrained", env)
    per_round: dict[int, list[float]] = {}
    for ep in range(episodes):
        obs, _ = env.reset(seed=5_000 + ep)
        done, k = False, 0
        while not done:
            want = np.asarray(expert.allocate(obs))
            got = np.asarray(learned.allocate(obs))
            per_round.setdefault(k, []).append(float(np.abs(want - got).sum() / 2 / want.sum()))
            obs, _, terminated, truncated, _ = env.step(adaroll_env.encode_counts(got))
            done, k = bool(terminated or truncated), k + 1
    rounds = [float(np.mean(per_round[k])) for k in sorted(per_round)]
    return {"num_questions": num_questions, "episodes": episodes, "per_round": rounds,
            "mean": float(np.mean(rounds))}  # fmt: skip


def main() -> None:
    """Measure at B = 16 and 64, print and write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--episodes", type=int, default=100, help="episodes per B (default 100)")
    args = ap.parse_args()
    out = [measure(b, args.episodes) for b in (16, 64)]
    for r in out:
        rounds = ", ".join(f"{100 * x:.0f}" for x in r["per_round"])  # type: ignore[attr-defined]
        print(f"B = {r['num_questions']}: {100 * r['mean']:.1f} % of a round's rollouts placed "
              f"otherwise (rounds: {rounds} %)")  # fmt: skip
    path = Path(__file__).with_name("clone_disagreement.json")
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"written: {path}")


if __name__ == "__main__":
    main()
