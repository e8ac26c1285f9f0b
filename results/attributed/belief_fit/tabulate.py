"""The belief-fit and pilot validation, read by the rules of README.md from the committed evidence.

Per task: every entrant's validation AUC (here: pass@1 averaged over the evaluations, step 0
included, as the rule says), final pass@1 and pass@8, and median seconds per step, per seed and
averaged; then the comparisons the rules name, paired by seed, and the verdicts. Usage, from
the repository root:

    python results/attributed/belief_fit/tabulate.py [SPELL_EVIDENCE] [ARITHMETIC_EVIDENCE]

(default: ``spell/`` and ``arithmetic/`` beside this file, as ``adaroll compete --tabulate
runs/attributed/belief_fit/<task> --evidence results/attributed/belief_fit/<task>`` writes them).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from trainers.experiments.statistics import load_entrant_runs

HERE = Path(__file__).resolve().parent
#: (entrant, the entrant it is compared with, what adopting it means, the task where it must
#: gain, the tolerance on the other task); the rule asks the AUC difference to be > 0 on that
#: task and >= -tolerance points on the other
RULES = (
    ("bamdp-weighted", "bamdp", "weighted fit as the default", "spell_backward", 0.5),
    ("bamdp-weighted-pilot2", "bamdp-weighted", "pilot of 2 in the default", "spell_backward",
     0.5),
    ("bamdp-weighted-pilot2-skip", "bamdp-weighted-pilot2", "pilot_threshold 0.01 in the default",
     "arithmetic", 0.5),
    ("bamdp-weighted-pilot2-snr2", "bamdp-weighted-pilot2", "utility snr(2) as the default",
     "arithmetic", 0.5),
    # 2026-12-07 (README.md, "prior_filter as the TRL default"): not lower at all on spell
    ("prior_filter", "bamdp-weighted-pilot2", "prior_filter (pool of 2·B) as the TRL default",
     "arithmetic", 0.0),
)  # fmt: skip


def runs(evidence: Path) -> dict[str, dict[str, dict[str, float]]]:
    """entrant -> seed -> {auc, final, final8, seconds} of every finished run (a run a signal
    stopped before its last step is left out: ``statistics.load_entrant_runs``)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for entrant in sorted(p for p in (evidence / "runs").glob("*") if p.is_dir()):
        for run in load_entrant_runs(entrant)[0]:
            evals = run["eval"]
            seconds = [float(m["step_seconds"]) for m in run["metrics"] if "step_seconds" in m]
            out.setdefault(entrant.name, {})[f"seed{run['seed']}"] = {
                "auc": 100 * statistics.mean(e["pass@1"] for e in evals),
                "final": 100 * evals[-1]["pass@1"],
                "final8": 100 * evals[-1].get("pass@8", float("nan")),
                "seconds": statistics.median(seconds) if seconds else float("nan"),
            }
    return out


def table(name: str, found: dict[str, dict[str, dict[str, float]]]) -> None:
    """One row per entrant: the means over seeds and each seed's AUC and final pass@1."""
    print(f"\n### {name}\n")
    print("| entrant | seeds | validation AUC, % | final pass@1, % | final pass@8, % "
          "| s / step (median) | per seed: AUC / final |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---|")
    for entrant, seeds in found.items():
        m = {k: statistics.mean(s[k] for s in seeds.values()) for k in ("auc", "final", "final8")}
        sec = statistics.median(s["seconds"] for s in seeds.values())
        per = ", ".join(f"{k.removeprefix('seed')}: {s['auc']:.1f} / {s['final']:.1f}"
                        for k, s in seeds.items())  # fmt: skip
        print(f"| `{entrant}` | {len(seeds)} | {m['auc']:.2f} | {m['final']:.1f} "
              f"| {m['final8']:.1f} | {sec:.2f} | {per} |")  # fmt: skip


def paired(found: dict[str, dict[str, dict[str, float]]], a: str, b: str) -> list[float] | None:
    """AUC differences a − b on the seeds both finished (None: either is missing)."""
    if a not in found or b not in found:
        return None
    seeds = sorted(set(found[a]) & set(found[b]))
    return [found[a][s]["auc"] - found[b][s]["auc"] for s in seeds] or None


def main(spell: Path, arithmetic: Path) -> None:
    """The two tables, the paired differences and each rule's verdict."""
    tasks = {"rg:spell_backward × qwen3": runs(spell), "arithmetic × tiny": runs(arithmetic)}
    for name, found in tasks.items():
        table(name, found)
    print("\n### The rules (validation AUC, paired by seed)\n")
    s_found, a_found = tasks.values()
    for a, b, what, gains, tolerance in RULES:
        diffs = {"spell_backward": paired(s_found, a, b), "arithmetic": paired(a_found, a, b)}
        text = []
        for label, d in diffs.items():
            text.append(f"{label} {statistics.mean(d):+.2f} ({', '.join(f'{x:+.1f}' for x in d)})"
                        if d else f"{label} not run")  # fmt: skip
        other = next(k for k in diffs if k != gains)
        dg, do = diffs[gains], diffs[other]
        if dg is not None and len(dg) >= 2 and statistics.mean(dg) <= 0:
            verdict = f"not adopted (no gain on {gains}; {other} cannot change that)"
        elif dg is None or do is None or len(dg) < 2 or len(do) < 2:
            verdict = "not decided (runs missing)"
        elif statistics.mean(dg) > 0 and statistics.mean(do) >= -tolerance:
            verdict = "adopted"
        else:
            verdict = "not adopted"
        print(f"- {what}: `{a}` − `{b}`: {'; '.join(text)} → **{verdict}**")


if __name__ == "__main__":
    args = [Path(x) for x in sys.argv[1:]]
    main(*(args or [HERE / "spell", HERE / "arithmetic"]))
