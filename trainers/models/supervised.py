"""Supervised training of a warm start, written once for ``pretrain-tiny`` and ``warm-start``.

- ``encode_supervised``: ``prompt answer </s>`` rows with the loss on the answer and ``</s>``;
  the prompt is encoded exactly as the trainer encodes it (``trainers.models.prompts``), the
  answer after it without special tokens, so the model learns the completion the trainer samples.
- ``batch_stream``: every batch of the run, drawn at once from a seed, each level with its weight.
- ``Schedule`` and ``train_supervised``: teacher-forced AdamW steps with linear warm-up and cosine
  decay to a tenth, gradient norm clipped at 1.
- ``RunControl``: checkpoints every N steps or M minutes, and a clean stop on SIGINT/SIGTERM
  (``trainers.run.stopping``): the step in progress finishes, a checkpoint is written, and
  ``RunInterrupted`` carries the command that resumes it (exit status 130/143). A resumed run is
  bit-identical to one never stopped: the weights, the optimizer and the schedule come back from
  the checkpoint, and the batches are drawn again from the same seed.
- ``build_once``: a cached directory built once under a file lock, in a partial directory beside
  it that is renamed into place when complete (an interrupted build resumes from its checkpoint).

Checkpoints are ``<dir>/checkpoints/step-NNNNNN/state.pt`` (weights, optimizer, schedule, losses,
seconds), written into a temporary directory and renamed with a ``COMPLETE`` marker; only the
newest is kept.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainers.models.collate import pad_rows

__all__ = [
    "IGNORE_INDEX",
    "RunControl",
    "Schedule",
    "batch_stream",
    "build_once",
    "encode_supervised",
    "latest_checkpoint",
    "loss_summary",
    "lr_factor",
    "train_supervised",
]

IGNORE_INDEX = -100
#: the checkpoints of a run directory live here
CHECKPOINTS = "checkpoints"
CHECKPOINT_PREFIX = "step-"


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------


def encode_supervised(
    tokenizer: Any,
    prompts: Sequence[str],
    answers: Sequence[str],
    *,
    prompt_format: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``prompt answer </s>`` ids and labels (-100 on the prompt and padding).

    The prompt's ids are ``prompt_format.encode(tokenizer, prompt)`` (a
    ``trainers.models.prompts.PromptFormat``; default: plain text, ``tokenizer(prompt)``, which
    for the character tokenizer starts with ``<s>``), the answer's are
    ``tokenizer(answer, add_special_tokens=False)``. Returns ``input_ids`` and ``labels``, both
    ``[N, T]`` (T = the longest sequence).
    """
    from trainers.models.prompts import PromptFormat

    fmt = prompt_format if prompt_format is not None else PromptFormat(chat_template="none")
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    # Tokenize each distinct string once (synthetic data repeats expressions a lot).
    prompt_ids = {p: fmt.encode(tokenizer, p) for p in sorted(set(prompts))}
    distinct = sorted(set(answers))
    answer_ids = dict(
        zip(distinct, tokenizer(distinct, add_special_tokens=False).input_ids, strict=True)
    )
    rows, targets = [], []
    for prompt, answer in zip(prompts, answers, strict=True):
        p, a = prompt_ids[prompt], answer_ids[answer]
        rows.append([*p, *a, eos])
        targets.append([IGNORE_INDEX] * len(p) + [*a, eos])
    input_ids = pad_rows(rows, value=pad, side="right")  # [N, T]
    labels = pad_rows(targets, value=IGNORE_INDEX, side="right")  # [N, T]
    return input_ids, labels


def batch_stream(
    levels: Sequence[int] | np.ndarray,
    weights: np.ndarray,
    steps: int,
    batch_size: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Every batch of the run, drawn at once: ``[steps, batch_size]`` indices into the examples
    whose levels are ``levels``; level ``l`` has probability ``weights[l]`` (normalised over the
    levels present), spread evenly over its examples."""
    lv = np.asarray(levels, dtype=np.int64)
    per_level = np.bincount(lv, minlength=weights.size)
    p = weights[lv] / per_level[lv]
    return rng.choice(lv.size, size=(steps, batch_size), p=p / p.sum())


# ----------------------------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------------------------


def lr_factor(step: int, total: int, warmup: int) -> float:
    """The learning rate's factor at ``step``: linear warm-up over ``warmup`` steps, then cosine
    decay from 1 to 0.1 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))


def loss_summary(losses: list[float], points: int = 20) -> dict[str, Any]:
    """First and last tenth's mean loss, the minimum and a curve of about ``points`` means."""
    arr = np.asarray(losses)
    window = max(1, len(arr) // points)
    curve = [float(arr[i : i + window].mean()) for i in range(0, len(arr), window)]
    tail = max(1, len(arr) // 10)
    return {
        "first": float(arr[:tail].mean()),
        "last": float(arr[-tail:].mean()),
        "min": float(arr.min()),
        "window": window,
        "curve": curve,
    }


@dataclass(frozen=True)
class Schedule:
    """The optimisation of a warm start: ``steps`` AdamW steps of ``batch_size`` sequences,
    peak ``lr``, ``weight_decay``, a ``warmup`` fraction of linear warm-up then cosine decay;
    ``seed`` draws the batches."""

    steps: int
    batch_size: int
    lr: float
    weight_decay: float
    warmup: float
    seed: int


@dataclass
class RunControl:
    """How a training run is watched and kept: the progress bar (``progress``, titled
    ``label``), where checkpoints go (``directory``: ``<directory>/checkpoints``), how often
    (``save_every`` steps, ``save_minutes`` minutes; 0 = never, a stop always saves), whether to
    continue from the newest checkpoint there (``resume``), and the command that resumes the run,
    printed when a signal stops it (``resume_command``)."""

    directory: Path
    label: str = "warm-start"
    progress: bool = True
    save_every: int = 0
    save_minutes: float = 0.0
    resume: bool = False
    resume_command: str = ""


def latest_checkpoint(directory: str | os.PathLike[str]) -> Path | None:
    """The newest complete checkpoint under ``directory/checkpoints``, or None."""
    root = Path(directory) / CHECKPOINTS
    if not root.is_dir():
        return None
    found = sorted(
        p
        for p in root.iterdir()
        if p.is_dir() and p.name.startswith(CHECKPOINT_PREFIX) and (p / "COMPLETE").is_file()
    )
    return found[-1] if found else None


def _save_checkpoint(directory: Path, state: dict[str, Any]) -> Path:
    """Write ``state`` atomically as the newest checkpoint and drop the older ones."""
    root = directory / CHECKPOINTS
    name = f"{CHECKPOINT_PREFIX}{state['step']:06d}"
    tmp, final = root / f".tmp-{name}", root / name
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    torch.save(state, tmp / "state.pt")
    (tmp / "COMPLETE").write_text(json.dumps({"step": state["step"]}) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    for old in root.iterdir():
        if old != final:
            shutil.rmtree(old, ignore_errors=True)
    return final


def _progress(label: str, enabled: bool, console: Any) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]:.3f}"),
        TimeElapsedColumn(),
        disable=not enabled,
        transient=True,
        console=console,
    )


def train_supervised(
    model: Any,
    tokenizer: Any,
    input_ids: torch.Tensor,
    labels: torch.Tensor,
    stream: np.ndarray,
    schedule: Schedule,
    control: RunControl,
    console: Any,
) -> tuple[list[float], float]:
    """Teacher-forced training of ``model`` on the rows of ``input_ids``/``labels`` (``[N, T]``,
    right-padded), batch ``k`` being the rows ``stream[k]``; the loss of each step and the
    seconds spent training (over every resumed part).

    Continues from the newest checkpoint of ``control.directory`` when ``control.resume``;
    checkpoints per ``control``; on SIGINT/SIGTERM (while ``trainers.run.stopping.StopSignals``
    is installed) saves after the step in progress and raises ``RunInterrupted``.
    """
    from trainers.run import stopping

    lengths = (input_ids != tokenizer.pad_token_id).sum(1)  # [N]
    torch.manual_seed(schedule.seed)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=schedule.lr, weight_decay=schedule.weight_decay, betas=(0.9, 0.98)
    )
    warmup = int(schedule.warmup * schedule.steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, schedule.steps, warmup)
    )
    losses: list[float] = []
    start_step, seconds_before = 0, 0.0
    found = latest_checkpoint(control.directory) if control.resume else None
    if found is not None:
        state = torch.load(found / "state.pt", weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.random.set_rng_state(state["torch_rng"])
        losses = [float(x) for x in state["losses"]]
        start_step, seconds_before = int(state["step"]), float(state["seconds"])
        console.print(f"resumed from {found} (step {start_step} of {schedule.steps})")
    model.train()
    started = time.perf_counter()
    last_save = started

    def checkpoint(step: int) -> Path:
        return _save_checkpoint(
            control.directory,
            {
                "step": step,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "torch_rng": torch.random.get_rng_state(),
                "losses": list(losses),
                "seconds": seconds_before + time.perf_counter() - started,
            },
        )

    progress = _progress(control.label, control.progress, console)
    with progress:
        bar = progress.add_task(
            "train", total=schedule.steps, completed=start_step, loss=float("nan")
        )
        for step in range(start_step, schedule.steps):
            signum = stopping.requested()
            if signum is not None:
                stopping.clear()
                path = checkpoint(step)
                progress.stop()
                message = (
                    f"adaroll {control.label}: stopped by {stopping.signal_name(signum)} after "
                    f"step {step} of {schedule.steps}, checkpoint saved in {path}: continue "
                    f"with: {control.resume_command}"
                )
                print(message, flush=True)  # one line, never wrapped
                raise stopping.RunInterrupted(signum, message)
            idx = torch.from_numpy(stream[step])
            width = int(lengths[idx].max())
            batch_ids = input_ids[idx, :width]  # [B, T]
            batch_labels = labels[idx, :width]  # [B, T]
            logits = model(
                input_ids=batch_ids,
                attention_mask=(batch_ids != tokenizer.pad_token_id).long(),
                use_cache=False,
            ).logits  # [B, T, V]
            loss = torch.nn.functional.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]),  # [B*(T-1), V]
                batch_labels[:, 1:].reshape(-1),  # [B*(T-1)]
                ignore_index=IGNORE_INDEX,
            )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
            progress.update(bar, advance=1, loss=losses[-1])
            done = step + 1
            now = time.perf_counter()
            due = (control.save_every and done % control.save_every == 0) or (
                control.save_minutes and now - last_save >= 60 * control.save_minutes
            )
            if due and done < schedule.steps:
                checkpoint(done)
                last_save = time.perf_counter()
    return losses, seconds_before + time.perf_counter() - started


def drop_checkpoints(directory: str | os.PathLike[str]) -> None:
    """Remove a finished run's checkpoints (its model is saved beside them)."""
    shutil.rmtree(Path(directory) / CHECKPOINTS, ignore_errors=True)


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Torch's CPU threads set to ``threads`` (0: one per core) inside, restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads or os.cpu_count() or 1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# ----------------------------------------------------------------------------------------------
# A directory built once
# ----------------------------------------------------------------------------------------------


def build_once(
    target: Path,
    *,
    complete: Callable[[Path], bool],
    build: Callable[[Path], Any],
    what: str,
    announce: bool = True,
) -> Path:
    """``target``, built by ``build(partial)`` when not ``complete(target)``, once.

    Concurrent callers (pytest-xdist workers, several trainers) wait on a file lock; the first
    builds into ``.<name>.partial`` beside the target and renames it into place, the others find
    it complete. A build stopped by a signal (``RunInterrupted``) keeps the partial directory, so
    the next call resumes from its checkpoint; any other failure removes it. Everything printed
    names the final directory, never the partial one.
    """
    import fcntl

    from trainers.run.stopping import RunInterrupted

    if complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if complete(target):
                return target
            if announce:
                print(f"adaroll: building {what} (once) into {target}")
            partial = target.parent / f".{target.name}.partial"
            partial.mkdir(exist_ok=True)
            partial.chmod(0o755)
            try:
                build(partial)
                if target.exists():  # an incomplete leftover (never a finished build)
                    shutil.rmtree(target)
                os.replace(partial, target)
            except RunInterrupted:
                raise  # the checkpoint stays for the next call
            except BaseException:
                shutil.rmtree(partial, ignore_errors=True)
                raise
            if announce:
                print(f"adaroll: saved {what} to {target}")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return target
