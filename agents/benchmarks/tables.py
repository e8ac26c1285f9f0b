"""The benchmark summary as printed tables (rich) and as Markdown."""

from __future__ import annotations

from typing import Any

from agents.benchmarks.config import BenchConfig
from agents.benchmarks.mechanism import MECHANISM

#: Decimals each mechanism figure is shown with.
MECHANISM_DIGITS = {"gradient_rollouts": 1, "informative_prompts": 2, "informative_frac": 3}


def _cells(r: dict[str, Any], with_exact: bool, with_gap: bool = False) -> list[str]:
    is_base = r["allocator"] == "uniform"
    cells = [
        r["allocator"] + (" (ref)" if r["reference_only"] else ""),
        f"{r['mean_utility']:.3f} ± {r['ci95']:.3f}",
        "—" if is_base else f"{r['gain']:+.3f} ± {r['gain_ci95']:.3f}",
        "—" if is_base else f"{r['gain_pct']:+.1f}%",
        *(
            f"{r[key]:.{digits}f} ± {r[key + '_ci95']:.{digits}f}"
            for key, digits in MECHANISM_DIGITS.items()
        ),
        f"{r['ms_per_batch']:.2f}",
        f"{r['episodes_per_s']:.0f}",
    ]
    if with_exact:
        cells.append("n/a" if r["exact_value"] is None else f"{r['exact_value']:.4f}")
    if with_gap:
        cells.append(f"{r['gap_pct']:.2f}% ± {r['gap_ci_pct']:.2f}%")
    return cells


_HEADERS = [
    "allocator",
    "mean utility ± 95% CI",
    "gain vs uniform ± 95% CI",
    "gain %",
    *(f"{title} ± CI" for title in MECHANISM.values()),
    "ms/batch",
    "episodes/s",
]


def format_tables(rows: list[dict[str, Any]], cfg: BenchConfig) -> list[Any]:
    """One rich Table per setting: mean utility with CI, paired gain over uniform, the mechanism
    figures with CIs, cost, and the exact outcome-tree value where it was computed."""
    from rich.table import Table

    tables = []
    for key in dict.fromkeys(r["setting"] for r in rows):
        sub = [r for r in rows if r["setting"] == key]
        with_exact = any(r["exact_value"] is not None for r in sub)
        with_gap = any(r["bound"] is not None for r in sub)
        about = f"B={cfg.num_questions}, {cfg.episodes} paired episodes, seed {cfg.seed}"
        if isinstance(sub[0].get("rounds"), str):
            about += f", rounds {sub[0]['rounds']}"
        elif sub[0].get("rounds") is not None:
            about += f", R={sub[0]['round_size']}"
        if with_gap:
            about += f"; certified bound {sub[0]['bound']:.3f}"
        table = Table(title=f"{key}  ({about})", title_justify="left")
        heads = [
            *_HEADERS,
            *(["exact value"] if with_exact else []),
            *(["gap to bound ± CI"] if with_gap else []),
        ]
        for i, head in enumerate(heads):
            table.add_column(head, justify="left" if i == 0 else "right")
        for r in sub:
            table.add_row(*_cells(r, with_exact, with_gap))
        tables.append(table)
    return tables


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The summary as a Markdown table (for READMEs and papers)."""
    with_exact = any(r["exact_value"] is not None for r in rows)
    with_gap = any(r["bound"] is not None for r in rows)
    heads = [
        "setting",
        *_HEADERS,
        *(["exact value"] if with_exact else []),
        *(["gap to bound ± CI"] if with_gap else []),
    ]
    lines = ["| " + " | ".join(heads) + " |", "|---|---|" + "---:|" * (len(heads) - 2)]
    for r in rows:
        gap = with_gap and r["bound"] is not None
        cells = _cells(r, with_exact, gap) + ([] if gap or not with_gap else ["—"])
        lines.append("| " + " | ".join([r["setting"], *cells]) + " |")
    return "\n".join(lines) + "\n"
