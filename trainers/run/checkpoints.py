"""Checkpoints of a training run, and the record of every config that ran in its directory.

A checkpoint is written into a temporary directory and renamed into place once complete, so a run
killed mid-write resumes from the last good one; the last ``keep_checkpoints`` (default
``KEEP_CHECKPOINTS``) are kept. Every
start of a run (fresh or resumed) records its config as ``configs/config-step-<N>.json`` (``N``:
the step it started at) beside ``config.json`` (the latest); ``check_resume_config`` refuses a
resume whose config differs from the last one in anything but ``RESUME_MAY_CHANGE`` unless
``allow_config_change`` is set, naming each differing field with its old and new value.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from trainers.grpo.config import ABSENT_MEANS, RESUME_MAY_CHANGE, GRPOConfig

CHECKPOINT_PREFIX = "step-"
KEEP_CHECKPOINTS = 2


def checkpoint_dirs(out: str | os.PathLike[str]) -> list[Path]:
    """Complete checkpoints of a run, oldest first (temporary, half-written ones excluded)."""
    root = Path(out) / "checkpoints"
    if not root.is_dir():
        return []
    found = [
        p
        for p in root.iterdir()
        if p.is_dir() and p.name.startswith(CHECKPOINT_PREFIX) and (p / "COMPLETE").exists()
    ]
    return sorted(found, key=lambda p: p.name)


def save_checkpoint(
    trainer: Any, out: str | os.PathLike[str], *, keep: int | None = None
) -> Path | None:
    """Write the trainer's checkpoint atomically; every rank writes its own state file. The
    newest ``keep`` checkpoints are kept (default: the config's ``keep_checkpoints``).

    Returns the checkpoint directory (on rank 0; None elsewhere).
    """
    import torch

    root = Path(out) / "checkpoints"
    final = root / f"{CHECKPOINT_PREFIX}{trainer.step:06d}"
    tmp = root / f".tmp-{CHECKPOINT_PREFIX}{trainer.step:06d}"
    acc = trainer.accelerator
    if trainer.rank == 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    if acc is not None:
        acc.wait_for_everyone()
    if trainer.rank == 0:
        trainer.policy.save_pretrained(tmp / "model", safe_serialization=True)
        trainer.tokenizer.save_pretrained(tmp / "model")
    torch.save(trainer.state_dict(), tmp / f"trainer-rank{trainer.rank}.pt")
    if acc is not None:
        acc.wait_for_everyone()
    if trainer.rank != 0:
        return None
    (tmp / "COMPLETE").write_text(json.dumps({"step": trainer.step}) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    if keep is None:
        keep = int(getattr(getattr(trainer, "cfg", None), "keep_checkpoints", KEEP_CHECKPOINTS))
    for old in checkpoint_dirs(out)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def load_checkpoint(trainer: Any, directory: str | os.PathLike[str]) -> None:
    """Restore weights, optimizer, counters, RNG and belief store from ``directory``."""
    import torch
    from safetensors.torch import load_file

    d = Path(directory)
    files = sorted((d / "model").glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"checkpoint {d} has no model weights (*.safetensors)")
    weights: dict[str, Any] = {}
    for f in files:
        weights.update(load_file(str(f)))
    missing, unexpected = trainer.policy.load_state_dict(weights, strict=False)
    tied = bool(getattr(trainer.policy.config, "tie_word_embeddings", False))
    bad = [k for k in missing if not (tied and "lm_head" in k)]
    if bad or unexpected:
        # saved under other names than the modules': transformers renames some families' weights
        # when saving (GPT-NeoX's lm_head is embed_out on disk), so load them as it does
        weights = _loaded_as_saved(trainer.policy, d / "model")
        missing, unexpected = trainer.policy.load_state_dict(weights, strict=False)
        bad = [k for k in missing if not (tied and "lm_head" in k)]
    if bad or unexpected:
        raise ValueError(
            f"checkpoint {d} does not match the model: missing {bad[:5]}, unexpected "
            f"{list(unexpected)[:5]}: resume with the same --model"
        )
    if tied:
        trainer.policy.tie_weights()
    state_file = d / f"trainer-rank{trainer.rank}.pt"
    if not state_file.exists():
        raise FileNotFoundError(
            f"checkpoint {d} has no state for rank {trainer.rank}: resume with the number of "
            "processes that wrote it"
        )
    trainer.load_state_dict(torch.load(state_file, weights_only=False))
    trainer.engine.sync_weights(trainer.policy)


def _loaded_as_saved(policy: Any, directory: Path) -> dict[str, Any]:
    """The state dict of the model saved in ``directory``, loaded by transformers (its renaming
    of saved weight names undone), in ``policy``'s class, config and dtype."""
    dtype = next(policy.parameters()).dtype
    loaded = type(policy).from_pretrained(
        directory, config=policy.config, local_files_only=True, dtype=dtype
    )
    return dict(loaded.state_dict())


# --- the configs that ran ---------------------------------------------------------------------
def config_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """``"field: old → new"`` for every field that differs, outside ``RESUME_MAY_CHANGE``. A
    field the old config lacks (written before the field existed) counts as what such a config
    ran with: ``ABSENT_MEANS``, else the field's default."""
    defaults = GRPOConfig.__dataclass_fields__
    out = []
    for k in sorted((set(old) | set(new)) - RESUME_MAY_CHANGE):
        if k not in old and k in defaults:
            before = ABSENT_MEANS.get(k, defaults[k].default)
            if new.get(k) == before:
                continue
            out.append(f"{k}: {before!r} (not recorded: the run predates it) → {new.get(k)!r}")
            continue
        if old.get(k, "(absent)") != new.get(k, "(absent)"):
            out.append(f"{k}: {old.get(k, '(absent)')!r} → {new.get(k, '(absent)')!r}")
    return out


def check_resume_config(cfg: GRPOConfig) -> None:
    """Refuse to resume ``cfg.out`` with a config that changes what a step computes."""
    path = Path(cfg.out) / "config.json"
    if not (cfg.resume and checkpoint_dirs(cfg.out) and path.exists()):
        return
    changes = config_changes(json.loads(path.read_text()), cfg.to_dict())
    if changes and not cfg.allow_config_change:
        raise ValueError(
            f"--resume of {cfg.out} with a different config: {'; '.join(changes)}. Resume with "
            "the config that ran (only the run length and logging may change), choose another "
            "--out, or pass --allow-config-change to continue anyway (every config that ran is "
            "kept under configs/)"
        )


def record_config(out: Path, cfg: GRPOConfig, step: int) -> None:
    """Write ``config.json`` and ``configs/config-step-<step>.json`` (the config of this start)."""
    text = json.dumps(cfg.to_dict(), indent=2) + "\n"
    (out / "configs").mkdir(parents=True, exist_ok=True)
    (out / "configs" / f"config-step-{step}.json").write_text(text)
    (out / "config.json").write_text(text)
