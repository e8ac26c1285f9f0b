"""``adaroll pretrain-tiny``: the supervised warm start of the ``tiny`` model on ``arithmetic``.

It is the arithmetic-Llama case of ``adaroll warm-start`` (``trainers.models.warm_start_task``:
the same data encoding, training loop, checkpoints, stops and report), with its own defaults,
its own config (``PretrainConfig``) and its own cache: ``load_policy("tiny")`` reads
``tiny-<digest>`` of the default config, a digest that has not changed since recipe version 2.

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

The directory written holds the model and tokenizer (``save_pretrained``), the model card
``adaroll_model.json`` of every warm start and, last, ``adaroll_tiny.json``: the config that ran,
the loss curve summary and the report.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from adaroll_env.stats import library_versions
from trainers.models.paths import cache_dir
from trainers.models.supervised import (
    IGNORE_INDEX,
    Schedule,
    batch_stream,
    build_once,
    encode_supervised,
    loss_summary,
    lr_factor,
)
from trainers.models.tiny import TINY_METADATA_FILE, TINY_RECIPE_VERSION, TinyConfig
from trainers.models.warm_start_report import evaluate, report_table, sample_completions
from trainers.models.warm_start_task import (
    MODEL_CARD,
    WarmStartPlan,
    prepare_out,
    train_plan,
    write_json_last,
)

__all__ = [
    "IGNORE_INDEX",
    "MODEL_CARD",
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

#: fields added with checkpoints and resume: they steer a run, not what it computes, so they
#: stay out of the cache digest and the recorded config (earlier builds keep their digest)
RUN_CONTROL = ("resume", "save_every", "save_minutes")


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
    resume: bool = field(
        default=False,
        metadata={"help": "continue the run in --out from its last checkpoint (same options)"},
    )
    save_every: int = field(default=0, metadata={"help": "checkpoint every N steps (0: never)"})
    save_minutes: float = field(
        default=10.0, metadata={"help": "checkpoint every M minutes (0: never)"}
    )

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
        if self.save_every < 0:
            raise ValueError(f"save_every ({self.save_every}) must be >= 0 (0: never)")
        if not self.save_minutes >= 0:
            raise ValueError(f"save_minutes ({self.save_minutes}) must be >= 0 (0: never)")
        self.weights()  # validates the spelling

    def recipe(self, *, keep_out: bool = False) -> dict[str, Any]:
        """The fields that make the model (all but ``RUN_CONTROL``, ``out`` and ``progress``);
        with ``keep_out``, ``out`` and ``progress`` too (the config recorded in
        ``adaroll_tiny.json``, as before checkpoints existed)."""
        drop = RUN_CONTROL if keep_out else (*RUN_CONTROL, "out", "progress")
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in drop}

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
# Data and training: the general warm start's (trainers.models.warm_start_task)
# ----------------------------------------------------------------------------------------------

_lr_factor = lr_factor
_loss_summary = loss_summary


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
    return batch_stream([ex.level for ex in train], cfg.weights(), cfg.steps, cfg.batch_size, rng)


def tiny_plan(cfg: PretrainConfig) -> WarmStartPlan:
    """The general warm start's plan of the tiny recipe: Llama, arithmetic's warm-up pool, the
    whole held-out split, exact match."""
    from trainers.models.architectures import ModelSize

    task, train = _warmup_data(cfg)
    arch = cfg.model_config()
    return WarmStartPlan(
        task=task,
        train=train,
        test=task.test,
        weights=cfg.weights(),
        arch="llama",
        size=ModelSize(
            hidden_size=arch.hidden_size,
            num_layers=arch.num_hidden_layers,
            intermediate_size=arch.intermediate_size,
            context=arch.max_position_embeddings,
            rope_theta=arch.rope_theta,
        ),
        schedule=Schedule(
            steps=cfg.steps,
            batch_size=cfg.batch_size,
            lr=cfg.lr,
            weight_decay=cfg.weight_decay,
            warmup=cfg.warmup,
            seed=cfg.seed,
        ),
        eval_samples=cfg.eval_samples,
        max_new_tokens=cfg.max_new_tokens,
        score=None,
    )


def train_and_save(
    cfg: PretrainConfig, directory: str | os.PathLike | None = None, *, resume: bool = True
) -> Path:
    """Train the tiny model per ``cfg``, save it into ``directory`` (default ``cfg.out``), print
    the report table and return the directory; a checkpoint there is resumed when ``resume``.

    The caller prints where the model ended up (``main`` and ``ensure_tiny_model``, which trains
    into a partial directory and renames it into place).
    """
    from rich.console import Console

    if directory is None and cfg.out is None:
        raise ValueError("train_and_save needs a directory or cfg.out; main(cfg) uses the cache")
    out = Path(directory if directory is not None else cfg.out)  # type: ignore[arg-type]
    console = Console()
    plan, result, card = train_plan(
        cfg, out, "pretrain-tiny", tiny_plan, task_spec="arithmetic", resume=resume,
        console=console,
    )  # fmt: skip
    meta: dict[str, Any] = {
        "config": cfg.recipe(keep_out=True),
        "recipe_version": TINY_RECIPE_VERSION,
        "task": plan.task.describe(),
        "parameters": card["parameters"],
        "loss": loss_summary(result.losses),
        "train_seconds": result.train_seconds,
        "total_seconds": card["total_seconds"],
        "threads": cfg.threads or os.cpu_count() or 1,
        "versions": library_versions(("torch", "transformers", "tokenizers")),
        "report": result.report,
    }
    # Written last: its presence marks a complete tiny model directory.
    write_json_last(out / TINY_METADATA_FILE, meta)
    console.print(report_table(result.report))
    console.print(
        f"loss {meta['loss']['first']:.3f} -> {meta['loss']['last']:.3f} in {cfg.steps} steps, "
        f"{meta['total_seconds']:.0f} s"
    )
    return out


# ----------------------------------------------------------------------------------------------
# The cache that load_policy("tiny") reads
# ----------------------------------------------------------------------------------------------


def _config_digest(cfg: PretrainConfig) -> str:
    fields = cfg.recipe()  # what it was before RUN_CONTROL existed: cached builds keep their name
    fields["recipe_version"] = TINY_RECIPE_VERSION
    text = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def tiny_model_dir(cfg: PretrainConfig | None = None) -> Path:
    """Where the warm-started tiny model of ``cfg`` (default: ``PretrainConfig()``) is cached.

    ``$ADAROLL_CACHE_DIR/models/tiny-<digest>`` (default root ``~/.cache/adaroll``); the digest
    hashes the pretraining config (all fields but ``out``, ``progress`` and ``RUN_CONTROL``) and
    the recipe version.
    """
    return cache_dir() / "models" / f"tiny-{_config_digest(cfg or PretrainConfig())}"


def _is_complete(directory: Path) -> bool:
    return (directory / TINY_METADATA_FILE).is_file()


def ensure_tiny_model(cfg: PretrainConfig | None = None, *, announce: bool = True) -> Path:
    """The cached tiny model directory of ``cfg``, built (once, atomically) if missing.

    Concurrent callers (pytest-xdist workers, several trainers) wait on a file lock; the first
    trains into a partial directory beside the target and renames it into place, the others
    find it complete (``trainers.models.supervised.build_once``; a build stopped by a signal
    resumes from its checkpoint). Everything printed names the final directory.
    """
    cfg = cfg if cfg is not None else PretrainConfig()
    return build_once(
        tiny_model_dir(cfg),
        complete=_is_complete,
        build=lambda partial: train_and_save(cfg, partial),
        what="the warm-started tiny model",
        announce=announce,
    )


def main(cfg: PretrainConfig) -> Path:
    """Warm-start the tiny model; with ``out`` unset, into the cache that ``load_policy('tiny')``
    reads (reusing a cached build of the same config). SIGINT/SIGTERM stop it cleanly, with a
    checkpoint (``--out DIR --resume`` continues it; a cache build resumes when run again).
    """
    from rich.console import Console

    from trainers.run import stopping

    with stopping.StopSignals():
        if cfg.out is not None:
            out = Path(cfg.out)
            if cfg.resume and _is_complete(out):
                print(f"already finished: {out} (nothing to resume)")
                return out
            resume = prepare_out(
                out, resume=cfg.resume, recipe=cfg.recipe(), command="pretrain-tiny"
            )
            path = train_and_save(cfg, out, resume=resume)
            Console().print(f"saved to {path}")
            stopping.clear()
            return path
        cached = _is_complete(tiny_model_dir(cfg))
        path = ensure_tiny_model(cfg)
        stopping.clear()
    if cached:
        meta = json.loads((path / TINY_METADATA_FILE).read_text())
        console = Console()
        console.print(report_table(meta["report"], title="tiny warm start, held-out (cached)"))
        console.print(f"already built: {path}")
    return path
