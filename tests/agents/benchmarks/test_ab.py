"""``agents.benchmarks.ab``: one allocator across two benchmark runs, episode by episode."""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path

import pytest

from agents.benchmarks.ab import ab_markdown, paired_between_runs

COLUMNS = ["setting", "allocator", "episode", "env_seed", "utility"]


def write_run(d: Path, rows: list[tuple[str, str, int, int, float]], *, gz: bool) -> Path:
    d.mkdir(parents=True)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(COLUMNS)
    w.writerows(rows)
    if gz:
        (d / "episodes.csv.gz").write_bytes(gzip.compress(buf.getvalue().encode()))
    else:
        (d / "episodes.csv").write_text(buf.getvalue())
    return d


def test_pairs_episodes_by_setting_and_index(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a", [
        ("s1", "bamdp", 0, 11, 1.0), ("s1", "bamdp", 1, 12, 2.0), ("s1", "bamdp", 2, 13, 3.0),
        ("s1", "uniform", 0, 11, 9.0), ("s2", "bamdp", 0, 21, 5.0), ("s3", "bamdp", 0, 31, 1.0),
    ], gz=True)  # fmt: skip
    b = write_run(tmp_path / "b", [
        ("s1", "bamdp", 2, 13, 3.0), ("s1", "bamdp", 0, 11, 2.0), ("s1", "bamdp", 1, 12, 3.5),
        ("s2", "bamdp", 0, 21, 4.0), ("s2", "bamdp", 1, 22, 4.0),
    ], gz=False)  # fmt: skip
    rows = paired_between_runs(a, b, "bamdp")
    assert [r["setting"] for r in rows] == ["s1", "s2"]  # s3 is only in A
    s1, s2 = rows
    assert s1["episodes"] == 3 and s1["mean_a"] == 2.0 and s1["mean_b"] == pytest.approx(17 / 6)
    assert s1["delta"] == pytest.approx(2.5 / 3) and s1["signs"] == [2, 1, 0]
    assert s2["episodes"] == 1 and s2["delta"] == -1.0 and s2["signs"] == [0, 0, 1]
    table = ab_markdown(rows, "values", "even")
    assert "| s1 | 3 | 2.000 | 2.833 | +0.833 ± " in table and "| 2/1/0 |" in table
    # another allocator of B against A's
    other = paired_between_runs(a, a, "uniform", "bamdp")
    assert other[0]["delta"] == -8.0


def test_refuses_runs_that_did_not_draw_the_same_episodes(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a", [("s", "bamdp", 0, 1, 1.0)], gz=False)
    b = write_run(tmp_path / "b", [("s", "bamdp", 0, 2, 1.0)], gz=False)
    with pytest.raises(ValueError, match=r"episode 0: env seed 1 in .* but 2 in .*same --seed"):
        paired_between_runs(a, b, "bamdp")
    with pytest.raises(ValueError, match="allocator 'vip' has no episodes in"):
        paired_between_runs(a, b, "vip")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"has no episodes\.csv or episodes\.csv\.gz"):
        paired_between_runs(a, tmp_path / "empty", "bamdp")
