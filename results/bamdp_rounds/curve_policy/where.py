"""Where the curve policy gains on ``bamdp``: one round at a time (a mechanism check, run after
the rule was read).

The shipped curve policy read 101.6 % and 101.7 % of ``bamdp``'s gain at B = 16 and 64 (common
outcomes, ``README.md``): a clone of ``bamdp``'s value curves, split exactly as ``bamdp`` splits
its own, a little *above* ``bamdp``. ``bamdp``'s round is the exact split of its curves, so the
difference is in the curves: ``bamdp``'s value the continuation of a round by a relaxation
(one price per later round), the clone's are those values fitted by a smooth network across many
states. This script plays hybrids on paired common-outcome episodes: ``bamdp`` everywhere but
round t, which the curve policy decides, for each t, and the curve policy everywhere; each
against ``bamdp`` alone (paired difference of utility, 95 % CI). Also, per round, how many of
the round's rollouts the two place differently on ``bamdp``'s own states (up to exchanging
questions in one state).

    python results/bamdp_rounds/curve_policy/where.py [--episodes 2000] [--sizes 16,64]

Writes ``where.json`` beside this file (``--out``; the committed ``where_b16.json`` and
``where_b64.json`` are ``--sizes 16`` and ``--sizes 64``, run side by side). Episodes: master
seed 5 (``clone_by_value.EVAL_SEED``), not the rule's seed 7.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

import adaroll_env
from agents.registry import make_allocator
from agents.sb3.features import flat_features
from results.bamdp_rounds.clone_by_value import drive_policy, make_env

MODEL = "agents/sb3/pretrained/rounds_rlvr_b16.zip"


def play(num_questions: int, episodes: int, clone_rounds: set[int]) -> NDArray[np.float64]:
    """Utility of ``bamdp`` with the curve policy deciding the rounds in ``clone_rounds``."""
    env = make_env(num_questions, "common")
    expert = make_allocator("bamdp", env)
    clone = make_allocator(f"sb3:{MODEL}", env)

    def choose(params: Any, obs: dict[str, Any]) -> NDArray[np.float32]:
        t = round(params.total_budget - float(obs["budget_left"][0])) // params.round_size
        who = clone if t in clone_rounds else expert
        return adaroll_env.encode_counts(who.allocate(obs))  # type: ignore[no-any-return]

    def reset(params: Any) -> None:
        expert.reset(params, seed=0)
        clone.reset(params, seed=0)

    return drive_policy(choose, num_questions, episodes, reset, "common")


def moved(num_questions: int, episodes: int) -> list[float]:
    """Per round, the share of its rollouts the curve policy places otherwise than ``bamdp``
    on ``bamdp``'s own states (``bamdp`` drives), questions in one state being exchangeable
    (within a state the sorted counts are compared, not which question gets which)."""
    env = make_env(num_questions, "common")
    params = env.unwrapped.params  # type: ignore[attr-defined]
    expert = make_allocator("bamdp", env)
    clone = make_allocator(f"sb3:{MODEL}", env)
    rounds = params.total_budget // params.round_size
    diff, total = np.zeros(rounds), np.zeros(rounds)
    for ep in range(episodes):
        obs, _ = env.reset(seed=40_000 + ep)
        done, t = False, 0
        while not done:
            b = expert.allocate(obs)
            c = clone.model.policy.decide(flat_features(params, obs))
            # questions in one state are exchangeable: compare each state's sorted counts
            key = np.stack([obs["alpha"], obs["beta"]], axis=1)
            _, state = np.unique(key, axis=0, return_inverse=True)
            for k in np.unique(state):
                at = state.reshape(-1) == k
                diff[t] += np.abs(np.sort(b[at]) - np.sort(c[at])).sum() / 2
            total[t] += b.sum()
            obs, _, terminated, truncated, _ = env.step(adaroll_env.encode_counts(b))
            done, t = bool(terminated or truncated), t + 1
    return (diff / total).tolist()  # type: ignore[no-any-return]


def main() -> None:
    """Play every hybrid at each size, print the table and write ``where.json``."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--episodes", type=int, default=2000, help="paired episodes per hybrid")
    ap.add_argument("--sizes", default="16,64", help="batch sizes B (16,64)")
    ap.add_argument("--out", default="where.json", help="JSON name beside this file")
    args = ap.parse_args()
    import torch as th

    th.set_num_threads(1)
    rows = []
    for b in (int(x) for x in args.sizes.split(",")):
        base = play(b, args.episodes, set())
        rounds = 8  # N = 8·B in rounds of B
        share = moved(b, min(args.episodes, 200))
        for label, which in [*((f"round {t}", {t}) for t in range(rounds)),
                             ("every round", set(range(rounds)))]:  # fmt: skip
            d = play(b, args.episodes, which) - base
            t = int(label.split()[1]) if label.startswith("round") else None
            rows.append({
                "num_questions": b, "curve_policy_decides": label,
                "minus_bamdp": float(d.mean()),
                "minus_bamdp_ci95": float(1.96 * d.std(ddof=1) / np.sqrt(d.size)),
                "rollouts_placed_otherwise": None if t is None else share[t],
            })  # fmt: skip
            print(rows[-1], flush=True)
    print("| B | the curve policy decides | − bamdp (utility an episode, 95 % CI) | rollouts "
          "placed otherwise on bamdp's states |")  # fmt: skip
    print("|---:|---|---:|---:|")
    for r in rows:
        share_txt = "" if r["rollouts_placed_otherwise"] is None else (
            f"{100 * r['rollouts_placed_otherwise']:.1f} %")  # fmt: skip
        print(f"| {r['num_questions']} | {r['curve_policy_decides']} | {r['minus_bamdp']:+.4f} ± "
              f"{r['minus_bamdp_ci95']:.4f} | {share_txt} |")  # fmt: skip
    out = Path(__file__).with_name(args.out)
    out.write_text(json.dumps({"episodes": args.episodes, "outcomes": "common",
                               "master_seed": 5, "rows": rows}, indent=2) + "\n")  # fmt: skip
    print(f"written: {out}")


if __name__ == "__main__":
    main()
