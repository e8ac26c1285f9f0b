"""Rollouts and held-out pass@1 per difficulty level, per entrant, of a TRL competition.

What a run's beliefs (``beliefs.json``: each training prompt that got a rollout, its level,
rollouts and successes) say about where the rollouts went, beside the final held-out pass@1 per
level (``eval.jsonl``). ``beliefs.json`` is not part of the committed evidence, so this reads the
competition directory and writes ``per_level.json`` (small) into the evidence directory, from
which it prints the table again. Usage, from the repository root:

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
    """Per entrant and seed: per level, the training prompts that got a rollout, their rollouts
    and successes, and the final held-out pass@1."""
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
        final = [json.loads(x) for x in (run / "eval.jsonl").read_text().splitlines()][-1]
        out.setdefault(run.parent.name, {})[run.name] = {
            level: {"prompts_with_rollouts": n, "rollouts": rollouts, "successes": successes,
                    "final_pass@1": final.get(f"pass@1/level{level}")}
            for level, (n, rollouts, successes) in sorted(levels.items())
        }  # fmt: skip
    return out


def show(data: dict[str, Any]) -> None:
    """One row per entrant, seed and level."""
    print("| entrant | seed | level | prompts with rollouts | rollouts per such prompt "
          "| success rate of its rollouts | final held-out pass@1, % |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, seeds in data.items():
        for seed, levels in seeds.items():
            for level, c in levels.items():
                n, r = c["prompts_with_rollouts"], c["rollouts"]
                rate = c["successes"] / r if r else float("nan")
                final = c["final_pass@1"]
                shown = "—" if final is None else f"{100 * final:.1f}"
                print(f"| `{name}` | {seed.removeprefix('seed')} | {level} | {n:,} "
                      f"| {r / max(n, 1):.1f} | {rate:.2f} | {shown} |")  # fmt: skip


def main(args: list[str]) -> None:
    """Collect into the evidence (two arguments) or print from it (one)."""
    if len(args) == 2:
        competition, evidence = map(Path, args)
        evidence.mkdir(parents=True, exist_ok=True)
        (evidence / FILE).write_text(json.dumps(collect(competition), indent=1) + "\n")
        print(f"wrote {evidence / FILE}")
    show(json.loads((Path(args[-1]) / FILE).read_text()))


if __name__ == "__main__":
    main(sys.argv[1:])
