"""The formatters the results blocks share (``trainers.reports.fmt``), on hand-made values."""

from __future__ import annotations

import pytest

from trainers.reports.fmt import (
    NOT_COMMITTED,
    committed,
    demote,
    find_table,
    markdown_tables,
    num,
    parse_table,
    pct,
    pm,
    table,
)


def test_pct_num_and_pm_say_dash_for_missing_values() -> None:
    assert pct(0.404) == "40.4 %"
    assert pct(0.12345, 2) == "12.35 %"
    assert pct(None) == pct(float("nan")) == pct(float("inf")) == "—"
    assert num(3.14159, ".2f") == "3.14"
    assert num(7, ",d") == "7"
    assert num(None, ".2f") == num(float("nan"), ".2f") == "—"
    assert pm(40.44, 2.51) == "40.4 ± 2.5"
    assert pm(0.031, 0.012, "+.1f", 100.0) == "+3.1 ± 1.2"  # no sign on the half-width
    assert pm(0.5, None, ".2f") == pm(0.5, float("nan"), ".2f") == "0.50"
    assert pm(None, 1.0) == pm(float("nan"), 1.0) == "—"


def test_table_aligns_columns_and_left_is_the_default() -> None:
    assert table(["a", "b"], [[1, "x"], [2.5, None]], "lr") == (
        "| a | b |\n|---|---:|\n| 1 | x |\n| 2.5 | None |"
    )
    assert table(["a", "b"], []) == "| a | b |\n|---|---|"


def test_committed_drops_headings_unless_asked_and_names_its_source() -> None:
    text = "\n# Title\n\n## Sub\n| a |\n|---|\n| 1 |\n#not a heading\n"
    assert committed(text, "r/t.md") == (
        "`r/t.md`, as its tabulator wrote it:\n\n| a |\n|---|\n| 1 |\n#not a heading"
    )
    kept = committed("# T\n| a |\n", "x.md", drop_title=False)
    assert kept == "`x.md`, as its tabulator wrote it:\n\n# T\n| a |"


def test_markdown_tables_are_runs_of_pipe_lines() -> None:
    text = "intro\n| a |\n|---|\n| 1 |\nbetween\n| b | c |\n|---|---|"
    assert markdown_tables(text) == ["| a |\n|---|\n| 1 |", "| b | c |\n|---|---|"]
    assert markdown_tables("no tables\n") == []


def test_demote_skips_code_fences_and_sixth_level_headings() -> None:
    text = "# A\n```\n# comment\n```\n## B\n###### F\n#tag"
    assert demote(text) == "## A\n```\n# comment\n```\n### B\n###### F\n#tag"
    assert demote("# A", 2) == "### A"


def test_parse_and_find_table() -> None:
    md = "| entrant | Δ AUC |\n|---|---:|\n| uniform | — |\n|  bamdp  | +1.0 |"
    assert parse_table(md) == [
        {"entrant": "uniform", "Δ AUC": "—"},
        {"entrant": "bamdp", "Δ AUC": "+1.0"},
    ]
    with pytest.raises(ValueError, match="not a markdown table"):
        parse_table("| just a header |")
    text = f"| run | x |\n|---|---|\n| r | 1 |\n\n{md}\n\n| entrant | other |\n|---|---|\n| u | 2 |"
    assert find_table(text, "entrant", "other") == [{"entrant": "u", "other": "2"}]
    assert find_table(text, "entrant", "AUC")[1]["Δ AUC"] == "+1.0"
    with pytest.raises(ValueError, match="no table with the columns 'entrant' and 'wins'"):
        find_table(text, "entrant", "wins")


def test_not_committed_names_what_is_missing() -> None:
    assert NOT_COMMITTED.format(what="the runs") == "*Not in the committed files: the runs.*"
