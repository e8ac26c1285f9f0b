"""Tests of trainers.run.provenance: what a run records of what produced it, and the check that
runs compared in one table were produced alike (``adaroll compete`` refuses them otherwise)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainers.experiments.compete import CompeteConfig, tabulate
from trainers.grpo import GRPOConfig
from trainers.run.provenance import (
    PROVENANCE_FILE,
    compare,
    read_provenance,
    record_start,
    start_record,
)


def _start(commit: str = "a" * 40, task: str = "arithmetic (task_seed 0)", weights: str = "w1",
           dirty: bool = False) -> dict:  # fmt: skip
    return {"commit": commit, "task": task, "weights_sha256": weights, "dirty": dirty}


def test_starts_are_appended_and_read_back(tmp_path: Path) -> None:
    assert read_provenance(tmp_path) is None  # a run written before runs recorded it
    record_start(tmp_path, _start())
    record_start(tmp_path, _start(commit="b" * 40))
    starts = read_provenance(tmp_path)
    assert [s["commit"] for s in starts] == ["a" * 40, "b" * 40]
    assert json.loads((tmp_path / PROVENANCE_FILE).read_text())["starts"] == starts
    assert not list(tmp_path.glob(".*.tmp"))


def test_runs_produced_alike_compare() -> None:
    got = compare({"u seed 0": [_start()], "b seed 0": [_start(), _start()]}, allow_mixed=False)
    assert got["commit"] == ["a" * 40] and got["weights_sha256"] == ["w1"]
    assert got["dirty"] == [] and got["unknown"] == []


@pytest.mark.parametrize(
    ("odd", "what"),
    [
        (_start(commit="c" * 40), "code commit differs"),
        (_start(task="rg:chain_sum (task_seed 0)"), "task differs"),
        (_start(weights="w2"), "warm-start weights differs"),
    ],
)
def test_runs_produced_unalike_are_refused_naming_what_and_where(odd: dict, what: str) -> None:
    runs = {"u seed 0": [_start()], "b seed 0": [_start()], "b seed 1": [_start(), odd]}
    with pytest.raises(ValueError) as info:
        compare(runs, allow_mixed=False)
    message = str(info.value)
    assert what in message and "b seed 1" in message and "--allow-mixed" in message
    mixed = compare(runs, allow_mixed=True)
    assert sum(len(v) > 1 for k, v in mixed.items() if k in ("commit", "task",
                                                             "weights_sha256")) == 1  # fmt: skip


def test_commits_that_share_the_code_compare_by_its_digest() -> None:
    """Runs started under two commits that changed only results or docs (one code digest) are
    compared; a different digest is refused as a code difference; a start without a digest
    (recorded before it existed) makes every run compare by commit, as before."""
    same = {"a": [_start(commit="a" * 40) | {"code": "d1"}],
            "b": [_start(commit="b" * 40) | {"code": "d1"}]}  # fmt: skip
    got = compare(same, allow_mixed=False)
    assert got["code"] == ["d1"] and got["commit"] == ["a" * 40, "b" * 40]
    other = {**same, "c": [_start(commit="a" * 40) | {"code": "d2"}]}
    with pytest.raises(ValueError, match=r"code \(the packages' git trees\) differs") as info:
        compare(other, allow_mixed=False)
    assert "'d2': c" in str(info.value) and "code commit" not in str(info.value)
    old = {**same, "c": [_start(commit="a" * 40)]}
    with pytest.raises(ValueError, match="code commit differs"):
        compare(old, allow_mixed=False)
    assert "code" not in compare(old, allow_mixed=True)


def test_the_code_digest_names_the_packages_trees_of_the_commit() -> None:
    """``git_state``'s ``code``: the sha256 of ``git rev-parse HEAD:<path>`` over the code paths,
    so it moves with the code and not with a README."""
    import hashlib
    import subprocess

    from trainers.models.warm_start_task import CODE_PATHS, git_state

    root = Path(__file__).resolve().parents[3]
    trees = subprocess.run(["git", "rev-parse", *(f"HEAD:{p}" for p in CODE_PATHS)], cwd=root,
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert git_state()["code"] == hashlib.sha256(trees.encode()).hexdigest()
    assert git_state(Path("/"))["code"] is None  # outside a checkout


def test_dirty_trees_and_unrecorded_runs_are_named() -> None:
    got = compare({"a": [_start(dirty=True)], "b": None, "c": [_start()]}, allow_mixed=False)
    assert got["dirty"] == ["a"] and got["unknown"] == ["b"]


def test_a_start_record_names_the_code_task_and_warm_start(tiny_model_dir: Path) -> None:
    from trainers.models.loading import weights_sha256

    rec = start_record(GRPOConfig(model=str(tiny_model_dir), task="arithmetic", task_seed=3))
    assert rec["task"] == "arithmetic (task_seed 3)" and rec["model"] == str(tiny_model_dir)
    assert rec["weights_sha256"] == weights_sha256(tiny_model_dir, length=64)
    assert len(rec["commit"]) == 40 and rec["dirty"] in (True, False)  # this checkout
    assert "torch" in rec["versions"] and rec["command"] == "(called from Python)"
    assert rec["step"] == 0  # a fresh start; a resume names its checkpoint's step
    assert start_record(GRPOConfig(model=str(tiny_model_dir)), step=40)["step"] == 40


def test_a_start_record_carries_the_warm_starts_model_card(tiny_model_dir: Path, tmp_path: Path):
    import shutil

    model = tmp_path / "ws"
    shutil.copytree(tiny_model_dir, model)
    card = {"task": "rg:chain_sum", "architecture": "gpt2", "steps": 1500,
            "weights_sha256": "ab" * 32, "git": {"commit": "c" * 40, "dirty": False}}  # fmt: skip
    (model / "adaroll_model.json").write_text(json.dumps(card))
    rec = start_record(GRPOConfig(model=str(model)))
    assert rec["model_card"] == {"task": "rg:chain_sum", "architecture": "gpt2", "steps": 1500,
                                 "weights_sha256": "ab" * 32, "commit": "c" * 40,
                                 "dirty": False}  # fmt: skip


def _finished_run(d: Path, start: dict | None) -> None:
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps({"steps": 2, "minutes": 0.1, "rollouts_total": 8}))
    evals = [{"step": s, "rollouts_total": 4 * s, "pass@1": 0.25} for s in (0, 2)]
    (d / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    metrics = [
        {"step": s, "gradient_rollouts": 2, "informative_prompts": 1, "informative_frac": 0.5,
         "rounds": 1, "step_seconds": 1.0, "alloc_overhead": 0.01}
        for s in (1, 2)
    ]  # fmt: skip
    (d / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    if start is not None:
        record_start(d, start)


def test_compete_tabulates_only_runs_produced_alike(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "a.safetensors").write_bytes(b"weights")
    cfg = CompeteConfig(allocators="uniform,thompson", seeds=2, out=str(tmp_path / "c"),
                        grpo=GRPOConfig(model=str(model)))  # fmt: skip
    for name in ("uniform", "thompson"):
        for s in range(2):
            odd = name == "thompson" and s == 1
            _finished_run(cfg.run_dir(name, s), _start(commit=("c" if odd else "a") * 40))
    with pytest.raises(ValueError, match="code commit differs") as info:
        tabulate(cfg)
    assert "thompson seed 1" in str(info.value)
    assert not (tmp_path / "c" / "table.md").exists()  # refused before anything is written
    import dataclasses

    summary = tabulate(dataclasses.replace(cfg, allow_mixed=True))
    assert len(summary["provenance"]["runs"]["commit"]) == 2
    first = (tmp_path / "c" / "table.md").read_text().splitlines()[0]
    assert "Runs: code `aaaaaaaaaaaa`, `cccccccccccc`;" in first  # no digest: by commit
    for name in ("uniform", "thompson"):  # the same two commits, one code digest: compared
        for s in range(2):
            odd = name == "thompson" and s == 1
            start = _start(commit=("c" if odd else "a") * 40) | {"code": "d" * 64}
            (Path(cfg.run_dir(name, s)) / PROVENANCE_FILE).unlink()
            record_start(cfg.run_dir(name, s), start)
    tabulate(cfg)
    first = (tmp_path / "c" / "table.md").read_text().splitlines()[0]
    assert "`cccccccccccc` (the same code: they differ outside the packages)" in first
