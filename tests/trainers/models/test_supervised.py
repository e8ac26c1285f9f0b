"""trainers.models.supervised: the warm starts' encoding, batches, training loop, checkpoints,
stops and once-only builds."""

from __future__ import annotations

import signal
from pathlib import Path

import numpy as np
import pytest
import torch
from rich.console import Console

from trainers.models import supervised
from trainers.models.architectures import ModelSize, build_model
from trainers.models.supervised import (
    IGNORE_INDEX,
    RunControl,
    Schedule,
    batch_stream,
    build_once,
    encode_supervised,
    latest_checkpoint,
    lr_factor,
    torch_threads,
    train_supervised,
)
from trainers.models.tiny import build_tiny_tokenizer
from trainers.run import stopping
from trainers.run.stopping import RunInterrupted


@pytest.fixture(autouse=True)
def _no_stop_requested():
    stopping._requested = None
    yield
    stopping._requested = None


def test_answers_are_encoded_after_the_prompt_as_the_trainer_samples_them() -> None:
    tok = build_tiny_tokenizer()
    ids, labels = encode_supervised(tok, ["7+8=", "1+1=", "7+8="], ["15", "2", "15"])
    prompt = tok("7+8=").input_ids
    answer = tok("15", add_special_tokens=False).input_ids
    eos, pad = tok.eos_token_id, tok.pad_token_id
    assert ids[0].tolist() == [*prompt, *answer, eos]
    assert labels[0].tolist() == [IGNORE_INDEX] * len(prompt) + [*answer, eos]
    assert ids[1].tolist()[-1] == pad and labels[1].tolist()[-1] == IGNORE_INDEX  # right-padded
    assert torch.equal(ids[0], ids[2])


def test_batches_follow_the_level_weights_and_the_seed() -> None:
    levels = np.array([0] * 90 + [1] * 10 + [2] * 5)
    weights = np.array([0.25, 0.75, 0.0])
    a = batch_stream(levels, weights, 200, 50, np.random.default_rng(4))
    assert a.shape == (200, 50)
    drawn = levels[a.ravel()]
    assert (drawn == 2).sum() == 0
    assert (drawn == 1).mean() == pytest.approx(0.75, abs=0.02)  # not 10/100: per level
    assert np.array_equal(a, batch_stream(levels, weights, 200, 50, np.random.default_rng(4)))
    assert lr_factor(0, 100, 10) == pytest.approx(0.1) and lr_factor(100, 100, 10) == 0.1


def _run(directory: Path, *, resume: bool = False, save_every: int = 0) -> list[float]:
    """Ten steps of a one-layer GPT-2 on a few sums (seed 0)."""
    directory.mkdir(parents=True, exist_ok=True)
    tok = build_tiny_tokenizer()
    model = build_model("gpt2", ModelSize(hidden_size=64, num_layers=1, context=32), seed=0)
    ids, labels = encode_supervised(tok, ["1+1=", "2+3=", "9+9="], ["2", "5", "18"])
    stream = batch_stream([0, 0, 0], np.array([1.0]), 10, 4, np.random.default_rng(0))
    schedule = Schedule(steps=10, batch_size=4, lr=1e-2, weight_decay=0.0, warmup=0.2, seed=0)
    control = RunControl(directory=directory, progress=False, resume=resume,
                         save_every=save_every, resume_command="again --resume")  # fmt: skip
    losses, _ = train_supervised(model, tok, ids, labels, stream, schedule, control, Console())
    torch.save(model.state_dict(), directory / "final.pt")
    return losses


def test_a_stop_saves_and_the_resumed_run_is_bit_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    straight = _run(tmp_path / "a")
    assert len(straight) == 10 and straight[-1] < straight[0]
    calls = {"n": 0}

    def stop_at_the_seventh_check() -> int | None:
        calls["n"] += 1
        return signal.SIGINT if calls["n"] == 7 else None

    monkeypatch.setattr(stopping, "requested", stop_at_the_seventh_check)
    with pytest.raises(RunInterrupted) as exc:
        _run(tmp_path / "b")
    assert exc.value.exit_code == 130
    printed = capsys.readouterr().out
    assert "stopped by SIGINT after step 6 of 10" in printed
    assert printed.strip().endswith("continue with: again --resume")
    assert latest_checkpoint(tmp_path / "b") == tmp_path / "b" / "checkpoints" / "step-000006"
    monkeypatch.undo()
    resumed = _run(tmp_path / "b", resume=True)
    assert resumed == straight
    a, b = (torch.load(tmp_path / d / "final.pt") for d in ("a", "b"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_checkpoints_every_n_steps_keep_only_the_newest(tmp_path: Path) -> None:
    _run(tmp_path, save_every=4)
    assert [p.name for p in (tmp_path / "checkpoints").iterdir()] == ["step-000008"]
    # a half-written checkpoint (no COMPLETE marker) is never resumed from
    (tmp_path / "checkpoints" / "step-000009").mkdir()
    assert latest_checkpoint(tmp_path).name == "step-000008"
    assert latest_checkpoint(tmp_path / "nowhere") is None


def test_torch_threads_are_restored() -> None:
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_an_interrupted_build_keeps_its_partial_directory_and_a_failed_one_does_not(
    tmp_path: Path, capsys
) -> None:
    target = tmp_path / "models" / "x"
    seen: list[Path] = []

    def stopped(partial: Path) -> None:
        seen.append(partial)
        (partial / "checkpoint").write_text("step 3")
        raise RunInterrupted(15, "stopped")

    with pytest.raises(RunInterrupted):
        build_once(target, complete=lambda d: (d / "done").exists(), build=stopped, what="x")
    assert (seen[0] / "checkpoint").read_text() == "step 3" and not target.exists()

    def resumed(partial: Path) -> None:
        assert (partial / "checkpoint").read_text() == "step 3"  # the same partial directory
        (partial / "done").write_text("")

    build_once(target, complete=lambda d: (d / "done").exists(), build=resumed, what="x")
    assert (target / "done").exists() and not seen[0].exists()
    printed = capsys.readouterr().out
    assert f"adaroll: saved x to {target}" in printed and ".partial" not in printed

    def failing(partial: Path) -> None:
        raise RuntimeError("boom")

    other = tmp_path / "models" / "y"
    with pytest.raises(RuntimeError, match="boom"):
        build_once(other, complete=lambda d: False, build=failing, what="y")
    assert sorted(p.name for p in other.parent.iterdir()) == [".x.lock", ".y.lock", "x"]
    assert supervised.CHECKPOINTS == "checkpoints"
