"""The benchmark summary as printed tables (rich) and as Markdown."""

from __future__ import annotations

from typing import Any

from agents.benchmarks.config import BenchConfig
from agents.benchmarks.mechanism import MECHANISM

#: Decimals each mechanism figure is shown with.
MECHANISM_DIGITS = {"gradient_rollouts": 1, "informative_prompts": 2, "informative_frac": 3}


def _cells(r: dict[str, Any], with_exact: bool, with_gap: bool = False) -> list[str]:
    from agents.registry import display_name

    is_base = r["allocator"] == "uniform"
    cells = [
        display_name(r["allocator"]) + (" (ref)" if r["reference_only"] else ""),
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


#: the columns a narrow terminal keeps (by header): the rest are dropped right to left
_ESSENTIAL = ("allocator", "mean utility ± 95% CI", "gain vs uniform ± 95% CI",
              "gap to bound ± CI")  # fmt: skip


def _width(head: str, cells: list[str]) -> int:
    """Columns a column takes: its widest cell or header word, with padding and border."""
    words = max(len(w) for w in head.split())
    return max([words, *(len(c) for c in cells)]) + 3  # padding and border


def format_tables(
    rows: list[dict[str, Any]], cfg: BenchConfig, *, width: int | None = None, wide: bool = False
) -> list[Any]:
    """One rich Table per setting, each after a line naming its setting and followed by one
    naming the columns left out, if any: mean utility with CI, paired gain over uniform, the
    mechanism figures with CIs, cost, and the exact outcome-tree value where it was computed.

    Within ``width`` terminal columns (unless ``wide``) numbers never wrap: the columns that do
    not fit are left out, from the right, keeping the allocator, utility, gains and gap to the
    bound, and a caption names them (``table.md`` in the run directory has every column); names
    are shown whole, wrapped onto a second line only if even they do not fit."""
    from rich.table import Table

    tables: list[Any] = []
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
        heads = [
            *_HEADERS,
            *(["exact value"] if with_exact else []),
            *(["gap to bound ± CI"] if with_gap else []),
        ]
        body = [_cells(r, with_exact, with_gap) for r in sub]
        cols = [[b[i] for b in body] for i in range(len(heads))]
        keep = list(range(len(heads)))
        if not wide and width is not None:
            need = 1 + sum(_width(h, c) for h, c in zip(heads, cols, strict=True))
            for i in reversed(range(len(heads))):
                if need <= width:
                    break
                if heads[i] not in _ESSENTIAL:
                    keep.remove(i)
                    need -= _width(heads[i], cols[i])
        else:
            need = 0
        dropped = [heads[i] for i in range(len(heads)) if i not in keep]
        excess = max(0, need - width) if width is not None and not wide else 0
        caption = (
            f"not shown (narrow terminal): {', '.join(dropped)}; every column: table.md in the "
            "run directory, or --wide"
            if dropped
            else None
        )
        from rich.text import Text

        tables.append(Text(f"{key}  ({about})", style="italic"))  # a title would widen it
        table = Table()
        for i in keep:  # a column is as wide as its widest cell: headers wrap, cells do not
            w = _width(heads[i], cols[i]) - 3
            if i == 0:  # names fold only when even the kept columns do not fit
                table.add_column(heads[i], justify="left", overflow="fold",
                                 width=max(8, w - excess))  # fmt: skip
            else:
                table.add_column(heads[i], justify="right", width=w)
        for b in body:
            table.add_row(*(b[i] for i in keep))
        tables.append(table)
        if caption is not None:  # printed below the table: a caption would widen it
            tables.append(Text(caption))
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
