"""Run directories that lose nothing (``adaroll_env.run_dirs``)."""

from __future__ import annotations

import json
from pathlib import Path

from adaroll_env.run_dirs import DONE_FILE, mark_done, read_done_marker, set_aside


def test_done_marker_round_trip_and_what_is_not_done(tmp_path: Path) -> None:
    assert read_done_marker(tmp_path) is None
    mark_done(tmp_path, {"steps": 7})
    record = read_done_marker(tmp_path)
    assert record is not None and record["steps"] == 7 and record["finished"].endswith("UTC")
    assert [p.name for p in tmp_path.iterdir()] == [DONE_FILE]  # no temporary file left
    (tmp_path / DONE_FILE).write_text("{half")  # a marker cut short is no marker
    assert read_done_marker(tmp_path) is None
    (tmp_path / DONE_FILE).write_text(json.dumps([1]))
    assert read_done_marker(tmp_path) is None


def test_set_aside_moves_only_results_and_never_overwrites(tmp_path: Path) -> None:
    assert set_aside(tmp_path, ["a.json"]) is None  # nothing there: nothing made
    assert not (tmp_path / "superseded").exists()
    (tmp_path / "a.json").write_text("1")
    (tmp_path / "tb").mkdir()
    (tmp_path / "tb" / "events").write_text("e")
    (tmp_path / "keep.txt").write_text("mine")
    mark_done(tmp_path, {"steps": 1})
    first = set_aside(tmp_path, ["a.json", "tb", "missing"])
    assert first is not None and first.parent == tmp_path / "superseded"
    assert sorted(p.name for p in first.iterdir()) == ["DONE", "a.json", "tb"]
    assert (first / "tb" / "events").read_text() == "e"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt", "superseded"]
    (tmp_path / "a.json").write_text("2")  # a second run in the same second: its own folder
    second = set_aside(tmp_path, ["a.json"])
    assert second is not None and second != first and (first / "a.json").read_text() == "1"
    assert (second / "a.json").read_text() == "2"
