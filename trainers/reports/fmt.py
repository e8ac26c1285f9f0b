"""Small formatters the results blocks share: percentages, intervals, committed tables."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

#: what a block says when the folder lacks the raw files a table would need
NOT_COMMITTED = "*Not in the committed files: {what}.*"


def pct(x: float | None, digits: int = 1) -> str:
    """``0.404 -> "40.4 %"``; ``None`` or NaN -> ``"—"``."""
    if x is None or not math.isfinite(x):
        return "—"
    return f"{100 * x:.{digits}f} %"


def num(x: float | None, spec: str) -> str:
    """``x`` formatted with ``spec``; ``None`` or NaN -> ``"—"``."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    return format(x, spec)


def pm(mean: float | None, half: float | None, spec: str = ".1f", scale: float = 1.0) -> str:
    """``"40.4 ± 2.5"``, the interval left out when it is missing."""
    if mean is None or not math.isfinite(mean):
        return "—"
    if half is None or not math.isfinite(half):
        return format(scale * mean, spec)
    return f"{format(scale * mean, spec)} ± {format(scale * half, spec.lstrip('+'))}"


def table(head: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """A markdown table; ``align`` one letter a column (``l`` or ``r``), text left by default."""
    align = align or "l" * len(head)
    rule = "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"
    lines = ["| " + " | ".join(head) + " |", rule]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def committed(text: str, source: str, *, drop_title: bool = True) -> str:
    """A table file as committed (a tabulator's output): its ``#`` headings dropped (the page
    has its own), introduced by the file it comes from."""
    lines = text.strip("\n").splitlines()
    if drop_title:
        lines = [x for x in lines if not re.match(r"^#{1,6} ", x)]
    body = "\n".join(lines).strip("\n")
    return f"`{source}`, as its tabulator wrote it:\n\n{body}"


def markdown_tables(text: str) -> list[str]:
    """The markdown tables in ``text`` (runs of lines starting with ``|``), in order."""
    out: list[str] = []
    run: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            run.append(line)
        elif run:
            out.append("\n".join(run))
            run = []
    return out


def demote(text: str, levels: int = 1) -> str:
    """Markdown headings one level (or ``levels``) deeper, outside code fences."""
    out, fence = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        if not fence and re.match(r"^#{1,5} ", line):
            line = "#" * levels + line
        out.append(line)
    return "\n".join(out)


def parse_table(md: str) -> list[dict[str, str]]:
    """The rows of one markdown table as ``{header: cell}`` (cells stripped)."""
    lines = [x for x in md.strip().splitlines() if x.startswith("|")]
    if len(lines) < 2:
        raise ValueError(f"not a markdown table: {md[:80]!r}")

    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]

    head = cells(lines[0])
    return [dict(zip(head, cells(x), strict=False)) for x in lines[2:]]


def find_table(text: str, first_header: str, has: str) -> list[dict[str, str]]:
    """The first table in ``text`` whose header starts with ``first_header`` and names ``has``."""
    for t in markdown_tables(text):
        head = t.splitlines()[0]
        if head.startswith(f"| {first_header} |") and has in head:
            return parse_table(t)
    raise ValueError(f"no table with the columns {first_header!r} and {has!r}")
