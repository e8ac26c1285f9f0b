"""Blocks of the speed page: environment steps against CartPole, and the TRL subclass's
overhead."""

from __future__ import annotations

from trainers.reports.data import Data, Output, block
from trainers.reports.fmt import table


@block("env_speed", "results/bamdp_rounds")
def env_speed(data: Data, out: Output) -> str:
    """``bench_env.txt`` (``scripts/bench_env.py``'s printed table) as markdown."""
    text = data.text("bench_env.txt")
    head = next(x for x in text.splitlines() if x.startswith("┃"))
    rows = [x for x in text.splitlines() if x.startswith("│")]

    def cells(line: str, bar: str) -> list[str]:
        return [c.strip() for c in line.strip().strip(bar).split(bar)]

    names = cells(head, "┃")
    body = [[f"`{c}`" if i == 0 else c for i, c in enumerate(cells(r, "│"))] for r in rows]
    title = text.splitlines()[0].strip()
    return table(names, body, "lrl" + "r" * (len(names) - 3)) + (
        f"\n\nFrom `bench_env.txt` ({title})."
    )


#: the overhead report's columns: header, key
_TRL = (
    ("s/step", "seconds_per_step"),
    ("generate + score", "gen_score_seconds"),
    ("of which generate", "generate_seconds"),
    ("reward", "reward_seconds"),
    ("allocator", "alloc_seconds"),
    ("subclass's own code", "own_seconds"),
    ("other", "other_gen_score_seconds"),
    ("loss + update", "train_seconds"),
)
_VARIANTS = {"trl": "TRL `GRPOTrainer`", "uniform": "subclass, `uniform`",
             "bamdp": "subclass, `bamdp`",
             "prior_filter": "subclass, `prior_filter` (pool)"}  # fmt: skip


@block("trl_overhead", "results/trl_overhead")
def trl_overhead(data: Data, out: Output) -> str:
    """``bench_trl_overhead.json``: medians per variant, and the overhead lines."""
    report = data.json("bench_trl_overhead.json")
    s = report["summary"]
    body = []
    for key, label in _VARIANTS.items():
        if key not in s:
            continue
        row = s[key]
        zero = key == "trl"
        body.append([
            label,
            *("—" if zero and k in ("alloc_seconds", "own_seconds") else f"{row[k]:.4f}"
              for _, k in _TRL),
            f"{row['rounds']:.0f}",
        ])  # fmt: skip
    head = ["variant", *(h for h, _ in _TRL), "rounds"]
    v = report["versions"]
    lines = [
        table(head, body, "l" + "r" * (len(head) - 1)),
        "",
        f"Seconds per step, medians over {report['config']['blocks']} alternating blocks × "
        f"{report['config']['steps']} steps (TRL {v.get('trl')}, transformers "
        f"{v.get('transformers')}, torch {v.get('torch')}; `bench_trl_overhead.json`).",
    ]
    if "uniform_overhead" in s:
        per = ", ".join(f"{x:+.1%}" for x in s["uniform_overhead_per_block"])
        lines += [
            "",
            f"- the subclass's own code with `uniform`, median share of a step: "
            f"**{s['uniform_own_share']:.2%}**",
            f"- step time, subclass with `uniform` against TRL (median of blocks): "
            f"{s['uniform_overhead']:+.1%} (per block: {per})",
        ]
    if "bamdp_ratio" in s:
        per = ", ".join(f"{x:.3f}" for x in s["bamdp_ratio_per_block"])
        lines += [
            f"- step time, subclass with `bamdp` at its defaults (two rounds) against TRL (median "
            f"of blocks): **{s['bamdp_ratio']:.3f}×** (per block: {per})",
            f"- `bamdp`'s allocation (priors and their refits included), median share of a step: "
            f"**{s['bamdp']['alloc_share']:.2%}**",
        ]
    if "prior_filter_ratio" in s:
        per = ", ".join(f"{x:.3f}" for x in s["prior_filter_ratio_per_block"])
        lines += [
            f"- step time, subclass with `prior_filter` and a pool (2·B prompts of G/2) against "
            f"TRL (median of blocks): **{s['prior_filter_ratio']:.3f}×** (per block: {per}); its "
            f"allocation's median share of a step: **{s['prior_filter']['alloc_share']:.2%}**",
        ]
    return "\n".join(lines)
