"""``adaroll pretrain-tiny``: the supervised warm start of the ``tiny`` model on ``arithmetic``.

Teacher-forced next-token training on ``<s> prompt answer </s>`` with the loss on the answer
tokens and ``</s>`` only, AdamW with linear warm-up and cosine decay. The run stops early on
purpose: GRPO needs a policy that is *almost able*, with per-prompt pass rates spread over
(0, 1) — easy levels mostly solved, middle levels partly, the hardest near 0 — so the default
config is tuned for that spread, not for accuracy. The report (per level, on the held-out split)
gives greedy accuracy, sampled (temperature 1) pass@1 and pass@k, and the fraction of prompts
whose sampled pass rate lies strictly between 0 and 1.

Data: the ``warmup`` half of the arithmetic expressions (GRPO trains on the other half, so what
it learns has to generalise), levels 0-5 weighted evenly, levels 6-7 (three-digit operands) left
out so that they stay near 0. The default (1,400 steps of 64 sequences, lr 1e-3, two layers of
width 128) takes about a minute on one CPU core and, over seeds 0-2, leaves held-out sampled
pass@1 near 0.28, pass@8 near 0.5 and 35-45 % of prompts with a pass rate strictly inside (0, 1).
A higher learning rate (3e-3) learns multi-digit addition far more slowly at this budget.

The directory written holds the model and tokenizer (``save_pretrained``) and
``adaroll_tiny.json``: the config that ran, the loss curve summary and the report.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from adaroll_env.stats import library_versions
from trainers.models.collate import pad_rows
from trainers.models.paths import cache_dir
from trainers.models.tiny import (
    TINY_METADATA_FILE,
    TINY_RECIPE_VERSION,
    TinyConfig,
    build_tiny_model,
    build_tiny_tokenizer,
)
from trainers.models.warm_start_report import evaluate, report_table, sample_completions

__all__ = [
    "IGNORE_INDEX",
    "PretrainConfig",
    "encode_supervised",
    "ensure_tiny_model",
    "evaluate",
    "main",
    "report_table",
    "sample_completions",
    "tiny_model_dir",
    "train_and_save",
]

IGNORE_INDEX = -100


@dataclass
class PretrainConfig:
    """Supervised warm start of the tiny model on the arithmetic task (adaroll pretrain-tiny)."""

    out: str | None = field(
        default=None,
        metadata={"help": "output directory; none = the tiny model cache (what load 'tiny' uses)"},
    )
    seed: int = field(
        default=0,
        metadata={
            "help": "seed of the task split (keep the trainer's, so its held-out split stays "
            "unseen), the initialisation and the batches"
        },
    )
    steps: int = field(default=1400, metadata={"help": "optimizer steps"})
    batch_size: int = field(default=64, metadata={"help": "sequences per step"})
    lr: float = field(default=1e-3, metadata={"help": "peak AdamW learning rate"})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay"})
    warmup: float = field(
        default=0.05, metadata={"help": "fraction of steps with linear warm-up (then cosine)"}
    )
    num_train: int = field(
        default=200000,
        metadata={
            "help": "arithmetic training examples in the pool (drawn evenly over all levels, "
            "then sampled by level_weights)"
        },
    )
    num_test: int = field(
        default=400,
        metadata={"help": "held-out arithmetic examples (keep the trainer's value: same split)"},
    )
    level_weights: str = field(
        default="1,1,1,1,1,1,0,0",
        metadata={
            "help": "comma-separated sampling weight of each arithmetic level (0 = not trained); "
            "the report covers every level"
        },
    )
    hidden_size: int = field(default=128, metadata={"help": "model width (heads of size 64)"})
    num_layers: int = field(default=2, metadata={"help": "transformer layers"})
    intermediate_size: int = field(default=256, metadata={"help": "MLP width"})
    eval_samples: int = field(
        default=8, metadata={"help": "samples per held-out prompt for pass@1 and pass@k (k)"}
    )
    max_new_tokens: int = field(default=6, metadata={"help": "completion length limit in eval"})
    threads: int = field(
        default=1,
        metadata={
            "help": "torch CPU threads (the model is too small to gain from more on a busy "
            "machine); 0 = one per core"
        },
    )
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})

    def __post_init__(self) -> None:
        positive = ("steps", "batch_size", "num_train", "num_test", "eval_samples")
        for name in (*positive, "hidden_size", "num_layers", "intermediate_size", "max_new_tokens"):
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"{name} ({value}) must be a positive integer")
        if self.hidden_size % 64:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) is not a multiple of the head size 64: "
                "use 64, 128, 192, ..."
            )
        if not self.lr > 0:
            raise ValueError(f"lr ({self.lr}) must be positive, e.g. 1e-3")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay ({self.weight_decay}) must be >= 0")
        if not 0 <= self.warmup < 1:
            raise ValueError(f"warmup ({self.warmup}) is a fraction of steps in [0, 1)")
        if self.threads < 0:
            raise ValueError(f"threads ({self.threads}) must be >= 0 (0 = one per core)")
        self.weights()  # validates the spelling

    def weights(self) -> np.ndarray:
        """The per-level sampling weights, normalised to sum to 1 (``[L]``)."""
        from trainers.tasks import ARITHMETIC_LEVELS

        count = len(ARITHMETIC_LEVELS)
        try:
            w = np.array([float(x) for x in self.level_weights.split(",")], dtype=np.float64)
        except ValueError:
            w = np.array([], dtype=np.float64)
        if w.size != count or not np.all(np.isfinite(w)) or (w < 0).any() or w.sum() <= 0:
            raise ValueError(
                f"level_weights ({self.level_weights!r}) must be {count} comma-separated "
                f"non-negative numbers, one per arithmetic level, not all 0, such as "
                f"'{','.join(['1'] * (count - 2) + ['0', '0'])}'"
            )
        return w / w.sum()

    def model_config(self) -> TinyConfig:
        """The tiny architecture these knobs describe."""
        heads = self.hidden_size // 64
        return TinyConfig(
            hidden_size=self.hidden_size,
            num_hidden_layers=self.num_layers,
            num_attention_heads=heads,
            num_key_value_heads=heads,
            head_dim=64,
            intermediate_size=self.intermediate_size,
        )


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------


def encode_supervised(
    tokenizer: Any, prompts: Sequence[str], answers: Sequence[str]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``<s> prompt answer </s>`` ids and labels (-100 on ``<s>``, prompt, padding).

    Returns ``input_ids`` and ``labels``, both ``[N, T]`` (T = the longest sequence).
    """
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    # Tokenize each distinct string once (synthetic data repeats expressions a lot).
    texts = [p + a for p, a in zip(prompts, answers, strict=True)]
    unique = sorted(set(texts) | set(prompts))
    encoded = dict(zip(unique, tokenizer(unique).input_ids, strict=True))
    rows, targets = [], []
    for text, prompt in zip(texts, prompts, strict=True):
        ids, n_prompt = encoded[text], len(encoded[prompt])
        rows.append([*ids, eos])
        targets.append([IGNORE_INDEX] * n_prompt + ids[n_prompt:] + [eos])
    input_ids = pad_rows(rows, value=pad, side="right")  # [N, T]
    labels = pad_rows(targets, value=IGNORE_INDEX, side="right")  # [N, T]
    return input_ids, labels


# ----------------------------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------------------------


def _lr_factor(step: int, total: int, warmup: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))


def _loss_summary(losses: list[float], points: int = 20) -> dict[str, Any]:
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


def _warmup_data(cfg: PretrainConfig) -> tuple[Any, list[Any]]:
    """The full arithmetic task (its held-out split is the trainer's) and the training examples.

    The level filter applies to the training examples only, and they come from the ``warmup``
    half of the expressions: GRPO's prompts (the ``rl`` half) stay unseen.
    """
    from trainers.tasks import make_task

    task = make_task(
        "arithmetic", seed=cfg.seed, num_train=cfg.num_train, num_test=cfg.num_test, pool="warmup"
    )
    weights = cfg.weights()
    return task, [ex for ex in task.train if weights[ex.level] > 0]


def _batch_stream(cfg: PretrainConfig, train: Sequence[Any], rng: np.random.Generator) -> Any:
    """Every batch of the run, drawn at once (``[steps, batch_size]`` indices into ``train``):
    level ``l`` has probability ``weights[l]``, spread evenly over its examples."""
    weights = cfg.weights()
    levels = np.array([ex.level for ex in train])
    per_level = np.bincount(levels, minlength=weights.size)
    p = weights[levels] / per_level[levels]
    return rng.choice(len(train), size=(cfg.steps, cfg.batch_size), p=p / p.sum())


def _progress(cfg: PretrainConfig, console: Any) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[bold]pretrain-tiny"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]:.3f}"),
        TimeElapsedColumn(),
        disable=not cfg.progress,
        transient=True,
        console=console,
    )


def _train(
    cfg: PretrainConfig, model: Any, tokenizer: Any, train: Sequence[Any], console: Any
) -> list[float]:
    """Teacher-forced training of ``model`` on ``train`` per ``cfg``; the loss of each step."""
    input_ids, labels = encode_supervised(
        tokenizer, [ex.prompt for ex in train], [ex.answer for ex in train]
    )  # [N, T]
    lengths = (input_ids != tokenizer.pad_token_id).sum(1)  # [N]
    rng = np.random.default_rng(cfg.seed)
    torch.manual_seed(cfg.seed)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.98)
    )
    warmup = int(cfg.warmup * cfg.steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: _lr_factor(s, cfg.steps, warmup)
    )
    model.train()
    losses: list[float] = []
    stream = _batch_stream(cfg, train, rng)
    progress = _progress(cfg, console)
    with progress:
        bar = progress.add_task("train", total=cfg.steps, loss=float("nan"))
        for step in range(cfg.steps):
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
    return losses


def train_and_save(cfg: PretrainConfig, directory: str | os.PathLike | None = None) -> Path:
    """Train the tiny model per ``cfg``, save it into ``directory`` (default ``cfg.out``), print
    the report table and return the directory.

    The caller prints where the model ended up (``main`` and ``ensure_tiny_model``, which trains
    into a temporary directory and renames it into place).
    """
    from rich.console import Console

    if directory is None and cfg.out is None:
        raise ValueError("train_and_save needs a directory or cfg.out; main(cfg) uses the cache")
    out = Path(directory if directory is not None else cfg.out)  # type: ignore[arg-type]
    console = Console()
    start = time.perf_counter()
    threads_before = torch.get_num_threads()
    torch.set_num_threads(cfg.threads or os.cpu_count() or 1)
    try:
        task, train = _warmup_data(cfg)
        tokenizer = build_tiny_tokenizer()
        model = build_tiny_model(cfg.model_config(), cfg.seed, tokenizer=tokenizer)
        losses = _train(cfg, model, tokenizer, train, console)
        train_seconds = time.perf_counter() - start
        report = evaluate(
            model,
            tokenizer,
            task.test,
            num_samples=cfg.eval_samples,
            max_new_tokens=cfg.max_new_tokens,
            seed=cfg.seed,
        )
        model.eval()
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        meta: dict[str, Any] = {
            "config": dataclasses.asdict(cfg),
            "recipe_version": TINY_RECIPE_VERSION,
            "task": task.describe(),
            "parameters": sum(p.numel() for p in model.parameters()),
            "loss": _loss_summary(losses),
            "train_seconds": train_seconds,
            "total_seconds": time.perf_counter() - start,
            "threads": torch.get_num_threads(),
            "versions": library_versions(("torch", "transformers", "tokenizers")),
            "report": report,
        }
        # Written last: its presence marks a complete model directory.
        (out / TINY_METADATA_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    finally:
        torch.set_num_threads(threads_before)
    console.print(report_table(report))
    console.print(
        f"loss {meta['loss']['first']:.3f} -> {meta['loss']['last']:.3f} in {cfg.steps} steps, "
        f"{meta['total_seconds']:.0f} s"
    )
    return out


# ----------------------------------------------------------------------------------------------
# The cache that load_policy("tiny") reads
# ----------------------------------------------------------------------------------------------


def _config_digest(cfg: PretrainConfig) -> str:
    fields = dataclasses.asdict(cfg)
    fields.pop("out", None)
    fields.pop("progress", None)
    fields["recipe_version"] = TINY_RECIPE_VERSION
    text = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def tiny_model_dir(cfg: PretrainConfig | None = None) -> Path:
    """Where the warm-started tiny model of ``cfg`` (default: ``PretrainConfig()``) is cached.

    ``$ADAROLL_CACHE_DIR/models/tiny-<digest>`` (default root ``~/.cache/adaroll``); the digest
    hashes the pretraining config (all fields but ``out`` and ``progress``) and the recipe version.
    """
    return cache_dir() / "models" / f"tiny-{_config_digest(cfg or PretrainConfig())}"


def _is_complete(directory: Path) -> bool:
    return (directory / TINY_METADATA_FILE).is_file()


def ensure_tiny_model(cfg: PretrainConfig | None = None, *, announce: bool = True) -> Path:
    """The cached tiny model directory of ``cfg``, built (once, atomically) if missing.

    Concurrent callers (pytest-xdist workers, several trainers) wait on a file lock; the first
    trains into a temporary directory beside the target and renames it into place, the others
    find it complete. Everything printed names the final directory, never the temporary one.
    """
    import fcntl

    cfg = cfg if cfg is not None else PretrainConfig()
    target = tiny_model_dir(cfg)
    if _is_complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if _is_complete(target):
                return target
            if announce:
                print(f"adaroll: building the warm-started tiny model (once) into {target}")
            tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.tmp-"))
            tmp.chmod(0o755)  # mkdtemp makes it private; the cache is shared like any other
            try:
                train_and_save(cfg, tmp)
                if target.exists():  # an incomplete leftover (never a finished build)
                    shutil.rmtree(target)
                os.replace(tmp, target)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            if announce:
                print(f"adaroll: saved the warm-started tiny model to {target}")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return target


def main(cfg: PretrainConfig) -> Path:
    """Warm-start the tiny model; with ``out`` unset, into the cache that ``load_policy('tiny')``
    reads (reusing a cached build of the same config).
    """
    from rich.console import Console

    if cfg.out is not None:
        out = Path(cfg.out)
        if out.is_dir():  # an earlier model there is kept, never overwritten
            from adaroll_env.run_dirs import SUPERSEDED_DIR, set_aside

            kept = set_aside(out, [p.name for p in out.iterdir() if p.name != SUPERSEDED_DIR])
            if kept is not None:
                print(f"adaroll pretrain-tiny: the earlier files of {out} are kept in {kept}")
        path = train_and_save(cfg)
        Console().print(f"saved to {path}")
        return path

    cached = _is_complete(tiny_model_dir(cfg))
    path = ensure_tiny_model(cfg)
    if cached:
        meta = json.loads((path / TINY_METADATA_FILE).read_text())
        console = Console()
        console.print(report_table(meta["report"], title="tiny warm start, held-out (cached)"))
        console.print(f"already built: {path}")
    return path
