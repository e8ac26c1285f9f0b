"""trainers.run.checkpoints: which checkpoints count, how many are kept, the configs that ran."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from trainers.grpo import GRPOConfig
from trainers.run.checkpoints import (
    check_resume_config,
    checkpoint_dirs,
    record_config,
    save_checkpoint,
)


def _fake_checkpoint(out: Path, step: int, *, complete: bool = True) -> Path:
    d = out / "checkpoints" / f"step-{step:06d}"
    d.mkdir(parents=True)
    if complete:
        (d / "COMPLETE").write_text(json.dumps({"step": step}))
    return d


def test_only_complete_checkpoints_count_oldest_first(tmp_path: Path) -> None:
    assert checkpoint_dirs(tmp_path) == []
    _fake_checkpoint(tmp_path, 12)
    _fake_checkpoint(tmp_path, 3)
    _fake_checkpoint(tmp_path, 15, complete=False)  # killed before COMPLETE was written
    (tmp_path / "checkpoints" / ".tmp-step-000018").mkdir()  # killed mid-write
    assert [d.name for d in checkpoint_dirs(tmp_path)] == ["step-000003", "step-000012"]


class _Policy:
    def save_pretrained(self, path: Path, **_: object) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)
        (Path(path) / "model.safetensors").write_bytes(b"w")


class _Tokenizer:
    def save_pretrained(self, path: Path) -> None:
        (Path(path) / "tokenizer.json").write_text("{}")


def _trainer(step: int, keep: int) -> SimpleNamespace:
    return SimpleNamespace(step=step, rank=0, accelerator=None, policy=_Policy(),
                           tokenizer=_Tokenizer(), state_dict=lambda: {"step": step},
                           cfg=SimpleNamespace(keep_checkpoints=keep))  # fmt: skip


@pytest.mark.parametrize("keep", [1, 2, 3])
def test_save_is_atomic_and_keeps_the_newest_keep_checkpoints(tmp_path: Path, keep: int) -> None:
    for step in (2, 4, 6, 8):
        final = save_checkpoint(_trainer(step, keep), tmp_path)
        assert final == tmp_path / "checkpoints" / f"step-{step:06d}"
        assert json.loads((final / "COMPLETE").read_text()) == {"step": step}
        assert (final / "trainer-rank0.pt").exists() and (
            final / "model" / "tokenizer.json"
        ).exists()
    names = [d.name for d in checkpoint_dirs(tmp_path)]
    assert names == [f"step-{s:06d}" for s in (2, 4, 6, 8)[-keep:]]
    assert not list((tmp_path / "checkpoints").glob(".tmp-*"))
    # an explicit keep overrides the config's
    save_checkpoint(_trainer(10, keep), tmp_path, keep=1)
    assert [d.name for d in checkpoint_dirs(tmp_path)] == ["step-000010"]


def test_record_config_keeps_every_start(tmp_path: Path) -> None:
    a, b = GRPOConfig(steps=4), GRPOConfig(steps=9)
    record_config(tmp_path, a, 0)
    record_config(tmp_path, b, 4)
    assert json.loads((tmp_path / "config.json").read_text())["steps"] == 9
    assert json.loads((tmp_path / "configs" / "config-step-0.json").read_text())["steps"] == 4
    assert json.loads((tmp_path / "configs" / "config-step-4.json").read_text())["steps"] == 9


def test_check_resume_config_names_each_change_and_lets_run_length_change(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    record_config(out, GRPOConfig(out=str(out), lr=1e-3), 0)
    _fake_checkpoint(out, 2)
    # the run length, checkpoint cadence and logging may change
    check_resume_config(GRPOConfig(out=str(out), lr=1e-3, resume=True, steps=99, save_every=7,
                                   save_minutes=5.0, keep_checkpoints=4))  # fmt: skip
    with pytest.raises(ValueError) as exc:
        check_resume_config(GRPOConfig(out=str(out), lr=2e-3, resume=True, allocator="bamdp"))
    text = str(exc.value)
    assert "allocator: 'uniform' → 'bamdp'" in text and "lr: 0.001 → 0.002" in text
    assert "--allow-config-change" in text
    check_resume_config(GRPOConfig(out=str(out), lr=2e-3, resume=True, allow_config_change=True))


def test_config_changes_reads_fields_added_since_as_their_defaults() -> None:
    from trainers.run.checkpoints import config_changes

    new = GRPOConfig().to_dict()
    old = {k: v for k, v in new.items() if k not in ("chat_template", "system_prompt")}
    assert config_changes(old, new) == []  # a run written before those fields existed
    assert config_changes(old, {**new, "chat_template": "none"}) == [
        "chat_template: 'auto' (not recorded: the run predates it) → 'none'"
    ]
    assert config_changes({**new, "lr": 1e-3}, {**new, "steps": 5}) == ["lr: 0.001 → 0.0002"]


def test_a_run_written_before_belief_fit_ran_with_discounted_counts() -> None:
    from trainers.grpo.config import ABSENT_MEANS
    from trainers.run.checkpoints import config_changes

    new = GRPOConfig(belief_fit="discounted").to_dict()
    old = {k: v for k, v in new.items() if k != "belief_fit"}
    assert ABSENT_MEANS["belief_fit"] == "discounted"  # whatever the default becomes
    assert config_changes(old, new) == []
    assert config_changes(old, {**new, "belief_fit": "weighted"}) == [
        "belief_fit: 'discounted' (not recorded: the run predates it) → 'weighted'"
    ]


def test_a_pilot_left_unset_is_recorded_as_it_runs_and_resumes_need_the_same() -> None:
    from trainers.grpo.config import ABSENT_MEANS
    from trainers.run.checkpoints import config_changes

    new = GRPOConfig(allocator="bamdp").to_dict()  # unset: bamdp's own pilot, recorded as 2
    assert new["pilot"] == 2
    # a run that recorded no pilot ran none: resuming it under bamdp's default is a change
    old = {k: v for k, v in new.items() if k != "pilot"}
    assert ABSENT_MEANS["pilot"] == 0
    assert config_changes(old, new) == ["pilot: 0 (not recorded: the run predates it) → 2"]
    assert config_changes(old, GRPOConfig(allocator="bamdp", pilot=0).to_dict()) == []
    # a run of before the default that recorded pilot 0: the same, named as the fix needs
    assert config_changes({**new, "pilot": 0}, new) == ["pilot: 0 → 2"]
