"""The run-directory reader's own pieces: metric names of older runs, and comparing two runs."""

from __future__ import annotations

import json

from trainers.run.run_files import compare_runs, read_metrics, renamed


def _write(d, metrics, evals):
    d.mkdir()
    (d / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    (d / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    return d


def test_older_metric_names_are_read_as_todays(tmp_path):
    assert renamed({"a": 1}) == {"a": 1}
    (tmp_path / "metrics.jsonl").write_text('{"step": 0, "trained_rollouts": 7}\n{"step": 1, "tr')
    # and steps numbered from 0 (before steps were numbered as evaluations are) from 1
    assert read_metrics(tmp_path / "metrics.jsonl") == [{"step": 1, "gradient_rollouts": 7}]


def test_compare_runs_ignores_timings_and_names_what_differs(tmp_path):
    m = [{"step": 0, "loss": 0.5, "step_seconds": 1.0, "trained_rollouts": 4}]
    a = _write(tmp_path / "a", m, [{"step": 0, "pass@1": 0.25, "seconds": 3.0}])
    same = [{"step": 0, "loss": 0.5, "step_seconds": 9.0, "gradient_rollouts": 4}]
    b = _write(tmp_path / "b", same, [{"step": 0, "pass@1": 0.25, "seconds": 1.0}])
    r = compare_runs(a, b)
    assert r["metrics.jsonl"]["identical"] and r["eval.jsonl"]["identical"]
    assert r["metrics.jsonl"]["compared"] == 3  # step, loss, gradient_rollouts
    other = [{"step": 0, "loss": 0.5000001, "step_seconds": 1.0, "gradient_rollouts": 4}]
    c = _write(tmp_path / "c", other, [{"step": 0, "pass@1": 0.25}])
    r = compare_runs(a, c)
    assert r["metrics.jsonl"]["differ"] == ["loss"] and not r["metrics.jsonl"]["identical"]
    short = _write(tmp_path / "d", [], [{"step": 0, "pass@1": 0.25}])
    assert not compare_runs(a, short)["metrics.jsonl"]["identical"]
