"""Where the rollouts went and what the priors said, per difficulty level, per entrant and seed.

What a run's ``beliefs.json`` can say exactly: each training prompt enters the store at its first
rollout, so the prompts of a level in the store are the distinct prompts of that level that got
at least one rollout in the whole run (with one seed every entrant draws the same prompts, and
plain TRL gives every drawn prompt its group, so its count is the number drawn). Beside it: the
success rate of the evidence the store still holds for them (each prompt's last visits, old ones
discounted by ``decay`` per step: recent training accuracy on the level, not a whole-run count),
the level's fitted prior at the end (mean and concentration a + b), and the final held-out
pass@1 on the level (``eval.jsonl``). The store does not keep how many rollouts each prompt got
over the run (its counts decay), so neither does this. ``beliefs.json`` is not part of the
committed evidence, so this reads the competition directory and writes ``per_level.json``
(small) into the evidence directory, from which it prints the table again; runs already there
and no longer in the competition directory (a competition continued on a fresh clone from its
evidence) are kept. Usage, from the
repository root:

    python results/trl_final/per_level.py COMPETITION_DIR EVIDENCE_DIR   # collect, write, print
    python results/trl_final/per_level.py EVIDENCE_DIR                   # print
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

FILE = "per_level.json"


def collect(competition: Path) -> dict[str, Any]:
    """Per entrant and seed: per level, the distinct training prompts that got a rollout, the
    successes and rollouts of the evidence left on them, the level's fitted prior at the end and
    the final held-out pass@1."""
    out: dict[str, Any] = {}
    for run in sorted(competition.glob("runs/*/seed*")):
        if not (run / "DONE").exists() or not (run / "beliefs.json").exists():
            continue
        beliefs = json.loads((run / "beliefs.json").read_text())
        levels: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
        for g, r, s in zip(beliefs["groups"], beliefs["rollouts"], beliefs["successes"],
                           strict=True):  # fmt: skip
            cell = levels[str(g)]
            cell[0] += 1
            cell[1] += r
            cell[2] += s
        priors = beliefs.get("group_priors") or {}
        final = [json.loads(x) for x in (run / "eval.jsonl").read_text().splitlines()][-1]
        out.setdefault(run.parent.name, {})[run.name] = {
            level: {"prompts_with_rollouts": n, "evidence_rollouts": rollouts,
                    "evidence_successes": successes, "fitted_prior": priors.get(level),
                    "final_pass@1": final.get(f"pass@1/level{level}")}
            for level, (n, rollouts, successes) in sorted(levels.items())
        }  # fmt: skip
    return out


def show(data: dict[str, Any]) -> None:
    """One row per entrant, seed and level."""
    print("| entrant | seed | level | distinct prompts given a rollout "
          "| success rate of the evidence held | fitted prior at the end: mean, a + b "
          "| final held-out pass@1, % |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, seeds in data.items():
        for seed, levels in seeds.items():
            for level, c in levels.items():
                n, r = c["prompts_with_rollouts"], c["evidence_rollouts"]
                rate = c["evidence_successes"] / r if r else float("nan")
                prior = c.get("fitted_prior")
                fit = "—" if not prior else f"{prior[0] / sum(prior):.3f}, {sum(prior):.3g}"
                final = c["final_pass@1"]
                shown = "—" if final is None else f"{100 * final:.1f}"
                print(f"| `{name}` | {seed.removeprefix('seed')} | {level} | {n:,} "
                      f"| {rate:.3f} | {fit} | {shown} |")  # fmt: skip


def main(args: list[str]) -> None:
    """Collect into the evidence (two arguments) or print from it (one)."""
    if len(args) == 2:
        competition, evidence = map(Path, args)
        evidence.mkdir(parents=True, exist_ok=True)
        path = evidence / FILE
        # runs collected earlier stay: a competition continued on a fresh clone holds its
        # earlier runs only as evidence copies, which have no beliefs.json
        data: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
        for name, seeds in collect(competition).items():
            data.setdefault(name, {}).update(seeds)
        data = {name: dict(sorted(data[name].items())) for name in sorted(data)}
        path.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {path}")
    show(json.loads((Path(args[-1]) / FILE).read_text()))


if __name__ == "__main__":
    main(sys.argv[1:])
