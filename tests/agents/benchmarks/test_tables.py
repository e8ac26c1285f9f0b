"""Tests of agents.benchmarks.tables: the Markdown table and the rich tables of hand-made rows."""

from __future__ import annotations

import io

from rich.console import Console

from agents.benchmarks.config import BenchConfig
from agents.benchmarks.tables import format_tables, markdown_table


def _row(allocator, setting="rounds/rlvr/hit/G=4", **kw):
    row = {
        "setting": setting,
        "allocator": allocator,
        "reference_only": allocator == "oracle",
        "mean_utility": 1.23456,
        "ci95": 0.0421,
        "gain": 0.1,
        "gain_ci95": 0.05,
        "gain_pct": 8.8,
        "gradient_rollouts": 12.345,
        "gradient_rollouts_ci95": 0.5,
        "informative_prompts": 1.5,
        "informative_prompts_ci95": 0.25,
        "informative_frac": 0.75,
        "informative_frac_ci95": 0.125,
        "ms_per_batch": 0.123,
        "episodes_per_s": 1234.4,
        "exact_value": None,
        "bound": None,
        "gap_pct": float("nan"),
        "gap_ci_pct": float("nan"),
        "rounds": None,
        "round_size": 2,
    }
    row.update(kw)
    return row


HEAD = (
    "| setting | allocator | mean utility ± 95% CI | gain vs uniform ± 95% CI | gain % | "
    "gradient rollouts ± CI | informative prompts ± CI | informative frac ± CI | ms/batch | "
    "episodes/s"
)


def test_markdown_table_by_hand():
    text = markdown_table([_row("uniform", gain=0.0), _row("oracle", gain=-0.25)])
    lines = text.splitlines()
    assert text.endswith("\n") and len(lines) == 4
    assert lines[0] == HEAD + " |"
    assert lines[1] == "|---|---|" + "---:|" * 8  # the setting and allocator left, numbers right
    assert lines[2] == (
        "| rounds/rlvr/hit/G=4 | uniform | 1.235 ± 0.042 | — | — | 12.3 ± 0.5 | 1.50 ± 0.25 | "
        "0.750 ± 0.125 | 0.12 | 1234 |"
    )
    assert lines[3] == (
        "| rounds/rlvr/hit/G=4 | oracle (ref) | 1.235 ± 0.042 | -0.250 ± 0.050 | +8.8% | "
        "12.3 ± 0.5 | 1.50 ± 0.25 | 0.750 ± 0.125 | 0.12 | 1234 |"
    )


def test_markdown_table_exact_value_and_gap_columns():
    rows = [
        _row("uniform", exact_value=1.5, bound=2.0, gap_pct=38.27, gap_ci_pct=2.1),
        _row("random", setting="rounds/rlvr/hit/G=8"),  # no exact value, no bound here
    ]
    lines = markdown_table(rows).splitlines()
    assert lines[0] == HEAD + " | exact value | gap to bound ± CI |"
    assert lines[1] == "|---|---|" + "---:|" * 10
    assert lines[2].endswith("| 1234 | 1.5000 | 38.27% ± 2.10% |")
    assert lines[3].endswith("| 1234 | n/a | — |")


def _render(table):
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(table)
    return out.getvalue()


def test_format_tables_one_per_setting():
    cfg = BenchConfig(num_questions=2, episodes=10, seed=4, progress=False)
    rows = [
        _row("uniform", gain=0.0),
        _row("random"),
        _row("uniform", setting="rounds/rlvr/hit/G=4/rounds=6+2", rounds="6+2", bound=1.5,
             gap_pct=10.0, gap_ci_pct=1.0),
        _row("random", setting="rounds/rlvr/hit/G=4/rounds=3", rounds=3, round_size=3),
    ]  # fmt: skip
    printed = format_tables(rows, cfg)  # a title line, then its table (no width: all columns)
    titles, tables = printed[0::2], printed[1::2]
    assert [t.plain for t in titles] == [
        "rounds/rlvr/hit/G=4  (B=2, 10 paired episodes, seed 4)",
        "rounds/rlvr/hit/G=4/rounds=6+2  (B=2, 10 paired episodes, seed 4, rounds 6+2; certified "
        "bound 1.500)",
        "rounds/rlvr/hit/G=4/rounds=3  (B=2, 10 paired episodes, seed 4, R=3)",
    ]
    assert [t.row_count for t in tables] == [2, 1, 1]
    assert [len(t.columns) for t in tables] == [9, 10, 9]
    first = _render(tables[0])
    assert "random" in first and "+0.100 ± 0.050" in first and "+8.8%" in first
    assert "10.00% ± 1.00%" in _render(tables[1])


def _printed(tables, width):
    buf = io.StringIO()
    console = Console(file=buf, width=width)
    for t in tables:
        console.print(t)
    return buf.getvalue()


def test_an_80_column_terminal_keeps_names_whole_and_numbers_on_one_line(tmp_path):
    cfg = BenchConfig(out=str(tmp_path), allocators="uniform")
    names = ["uniform", "knowledge_gradient", "sb3:pretrained"]
    rows = [_row(n, bound=14.0, gap_pct=1.25, gap_ci_pct=0.5) for n in names]
    text = _printed(format_tables(rows, cfg, width=80), 80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert sum(line.endswith("┘") for line in text.splitlines()) == 1  # the whole table fits
    for name in names:  # whole, on one line
        assert any(name in line for line in text.splitlines()), name
    for number in ("1.235 ± 0.042", "+0.100 ± 0.050", "1.25% ± 0.50%"):
        assert sum(number in line for line in text.splitlines()) == len(names) or (
            number.startswith("+") and sum(number in ln for ln in text.splitlines()) == 2
        ), number
    assert "not shown (narrow terminal): " in text and "episodes/s" in text.split("not shown")[1]
    assert "--wide" in text
    wide = _printed(format_tables(rows, cfg, width=80, wide=True), 250)
    assert "not shown" not in wide and "1234" in wide
    roomy = _printed(format_tables(rows, cfg, width=250), 250)
    assert "not shown" not in roomy


def test_a_plugin_is_shown_by_its_own_name(tmp_path, monkeypatch):
    import sys
    import types

    from agents import BaseAllocator

    mod = types.ModuleType("adaroll_test_plugin")

    class Hot(BaseAllocator):
        name = "hot"

        def allocate(self, obs):  # pragma: no cover - only its name is read
            raise AssertionError

    mod.Hot = Hot
    monkeypatch.setitem(sys.modules, "adaroll_test_plugin", mod)
    cfg = BenchConfig(out=str(tmp_path), allocators="uniform")
    text = _printed(format_tables([_row("adaroll_test_plugin:Hot")], cfg, width=200), 200)
    assert "│ hot " in text and "adaroll_test_plugin" not in text
    assert "| hot |" in markdown_table([_row("adaroll_test_plugin:Hot")])
