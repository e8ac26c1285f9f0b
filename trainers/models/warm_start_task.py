"""``adaroll warm-start``: a supervised warm start of any architecture on any task.

``--task`` is any ``make_task`` spec (``arithmetic``, ``sample``, ``jsonl:PATH``, ...), ``--arch``
one of ``trainers.models.architectures.ARCHITECTURES`` (``llama``, ``qwen3``, ``gpt_neox``,
``gpt2``), random-initialised at the given size with the character tokenizer. The model learns
``prompt answer </s>`` on the task's training split, the loss on the answer and ``</s>`` only,
the prompt encoded as the GRPO trainer encodes it (these tokenizers have no chat template, so
the plain text after ``<s>``); each level (difficulty group) is drawn equally often unless
``--level-weights`` says otherwise. ``arithmetic`` trains on its ``warmup`` half of the
expressions, as the tiny model does (GRPO trains on the other half). The split is drawn with
``--task-seed`` (default 0, the trainer's), so the trainer's held-out prompts stay unseen
whatever ``--seed`` initialises the model.

The context (``max_position_embeddings`` and the tokenizer's ``model_max_length``) is by default
the task's longest prompt + answer + ``</s>`` in tokens, plus a margin of 32 for longer
completions, rounded up to a multiple of 64 (64 for ``arithmetic``).

At the end a held-out report per level (``trainers.models.warm_start_report``: greedy accuracy,
sampled pass@1 and pass@k, the share of prompts whose pass rate is strictly inside (0, 1)),
scored by the task's own verifier, is printed and stored in the model card. It is on the test
split unless ``--report-split validation``: settings are chosen there, so that test stays unseen
by every choice (``arithmetic`` then draws a validation split from GRPO's half of the
expressions, which the warm start never trains on; ``rg:`` tasks have their own).

The directory (``--out DIR``, or the cache ``$ADAROLL_CACHE_DIR/models/<arch>-<task>-<digest>``
built once under a file lock) holds the model and tokenizer (``load_policy(DIR)``, ``--model
DIR``) and, written last, ``adaroll_model.json`` (``MODEL_CARD``): its presence marks a complete
directory. The card holds the task spec, the architecture and its size, the parameter count, the
steps, the weights' sha256, the held-out pass@1 and pass@k per level, the exact command, the git
commit (and whether the tree was dirty; null outside a git checkout), the config and the library
versions.

Runs are stoppable: SIGINT/SIGTERM stop after the step in progress, save a checkpoint and print
the command that resumes it (exit 130/143); ``--save-every``/``--save-minutes`` checkpoint on the
way; ``--out DIR --resume`` continues bit-identically to a run never stopped (a cache build
resumes by itself when run again). ``--out`` over an earlier finished model moves it to
``DIR/superseded/<UTC time>/`` first.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trainers.models.architectures import ARCHITECTURES, ModelSize, check_arch
from trainers.models.paths import cache_dir
from trainers.models.supervised import (
    RunControl,
    Schedule,
    batch_stream,
    build_once,
    drop_checkpoints,
    encode_supervised,
    latest_checkpoint,
    loss_summary,
    torch_threads,
    train_supervised,
)

__all__ = [
    "MODEL_CARD",
    "RECIPE_VERSION",
    "WarmStartConfig",
    "WarmStartPlan",
    "ensure_warm_start",
    "git_state",
    "main",
    "run_plan",
    "train_and_save",
    "warm_start_dir",
]

#: the file written last into a warm-started model directory; its presence marks it complete
MODEL_CARD = "adaroll_model.json"
#: bumped whenever the recipe (data, architectures, training code) changes, so cached builds of
#: an older recipe are not reused
RECIPE_VERSION = 1
#: the recipe of a run in progress, beside its checkpoints (``--resume`` checks it)
RUN_FILE = "adaroll_warm_start_run.json"
#: fields that steer a run but not what it computes: left out of the cache digest and the resume
#: check
RUN_CONTROL = ("out", "progress", "resume", "save_every", "save_minutes")
#: the tokens added to the longest example for the default context, and its rounding
CONTEXT_MARGIN, CONTEXT_STEP = 32, 64
#: arithmetic examples generated for the warm start unless --task-size says otherwise
ARITHMETIC_TRAIN = 200_000
#: arithmetic's validation split with --report-split validation (its most: 20% of each level)
ARITHMETIC_VALIDATION = 400
#: the splits --report-split takes
REPORT_SPLITS = ("test", "validation")


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class WarmStartConfig:
    """Supervised warm start of a model of any architecture on any task (adaroll warm-start)."""

    task: str = field(
        default="arithmetic",
        metadata=_help(
            "task spec, as for adaroll grpo: 'arithmetic', 'sample', 'jsonl:PATH', 'rg:<dataset>'"
        ),
    )
    arch: str = field(default="llama", metadata=_help(f"architecture: {', '.join(ARCHITECTURES)}"))
    out: str | None = field(
        default=None,
        metadata=_help("output directory; none = the cache (built once per recipe, reused)"),
    )
    seed: int = field(default=0, metadata=_help("seed of the initialisation and the batches"))
    task_seed: int = field(
        default=0,
        metadata=_help(
            "seed of the task's split (keep the trainer's --task-seed so its held-out prompts "
            "stay unseen)"
        ),
    )
    task_size: int | None = field(
        default=None,
        metadata=_help(
            f"training examples the arithmetic task generates (none: {ARITHMETIC_TRAIN:,}); "
            "other tasks are sized in their spec"
        ),
    )
    steps: int = field(default=800, metadata=_help("optimizer steps"))
    batch_size: int = field(default=64, metadata=_help("sequences per step"))
    lr: float = field(default=1e-3, metadata=_help("peak AdamW learning rate"))
    weight_decay: float = field(default=0.0, metadata=_help("AdamW weight decay"))
    warmup: float = field(
        default=0.05, metadata=_help("fraction of steps with linear warm-up (then cosine)")
    )
    level_weights: str = field(
        default="",
        metadata=_help(
            "comma-separated sampling weight of each level 0, 1, ... (0 = not trained); empty = "
            "every level of the training split equally"
        ),
    )
    hidden_size: int = field(default=256, metadata=_help("model width (heads of size 64)"))
    num_layers: int = field(default=4, metadata=_help("transformer layers"))
    intermediate_size: int = field(
        default=0, metadata=_help("MLP width; 0 = the family's (4x width, or 8/3x when gated)")
    )
    context: int = field(
        default=0,
        metadata=_help(
            "context in tokens (max_position_embeddings); 0 = the task's longest prompt + answer "
            f"+ {CONTEXT_MARGIN}, rounded up to a multiple of {CONTEXT_STEP}"
        ),
    )
    eval_size: int | None = field(
        default=400, metadata=_help("held-out prompts in the final report (none: all)")
    )
    report_split: str = field(
        default="test",
        metadata=_help(
            "split of the final report: 'test', or 'validation' to choose settings without "
            f"looking at test (arithmetic: {ARITHMETIC_VALIDATION} expressions of GRPO's half)"
        ),
    )
    eval_samples: int = field(
        default=8, metadata=_help("samples per held-out prompt for pass@1 and pass@k (k)")
    )
    max_new_tokens: int = field(
        default=0,
        metadata=_help("completion length in the report; 0 = the longest answer + 2"),
    )
    threads: int = field(default=1, metadata=_help("torch CPU threads (0 = one per core)"))
    progress: bool = field(default=True, metadata=_help("show a progress bar"))
    resume: bool = field(
        default=False,
        metadata=_help("continue the run in --out from its last checkpoint (same options)"),
    )
    save_every: int = field(default=0, metadata=_help("checkpoint every N steps (0: never)"))
    save_minutes: float = field(
        default=10.0, metadata=_help("checkpoint every M minutes (0: never)")
    )

    def __post_init__(self) -> None:
        check_arch(self.arch)
        for name in ("steps", "batch_size", "eval_samples"):
            _positive(name, getattr(self, name))
        for name in ("max_new_tokens", "context", "save_every", "threads"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} ({getattr(self, name)}) must be >= 0 (0: see --help)")
        for name in ("task_size", "eval_size"):
            if getattr(self, name) is not None:
                _positive(name, getattr(self, name))
        if not self.lr > 0:
            raise ValueError(f"lr ({self.lr}) must be positive, e.g. 1e-3")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay ({self.weight_decay}) must be >= 0")
        if not 0 <= self.warmup < 1:
            raise ValueError(f"warmup ({self.warmup}) is a fraction of steps in [0, 1)")
        if not self.save_minutes >= 0:
            raise ValueError(f"save_minutes ({self.save_minutes}) must be >= 0 (0: never)")
        if self.report_split not in REPORT_SPLITS:
            raise ValueError(
                f"report_split ({self.report_split!r}) must be one of {list(REPORT_SPLITS)}: "
                "'validation' to choose settings, 'test' for the final report"
            )
        self.size(context=self.context or CONTEXT_STEP)  # validates the shape
        parse_level_weights(self.level_weights, None)  # validates the spelling

    def size(self, context: int) -> ModelSize:
        """The model's shape at ``context``."""
        return ModelSize(
            hidden_size=self.hidden_size,
            num_layers=self.num_layers,
            intermediate_size=self.intermediate_size,
            context=context,
        )

    def recipe(self) -> dict[str, Any]:
        """Every field that changes what the run computes (all but ``RUN_CONTROL``)."""
        fields = dataclasses.asdict(self)
        return {k: v for k, v in fields.items() if k not in RUN_CONTROL}


def _positive(name: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"{name} ({value}) must be a positive integer")


def parse_level_weights(text: str, levels: int | None) -> np.ndarray | None:
    """The per-level weights of ``--level-weights`` (None when empty: every level equally),
    checked to have ``levels`` entries when given."""
    if not text.strip():
        return None
    try:
        w = np.array([float(x) for x in text.split(",")], dtype=np.float64)
    except ValueError:
        w = np.array([], dtype=np.float64)
    if w.size == 0 or not np.all(np.isfinite(w)) or (w < 0).any() or w.sum() <= 0:
        raise ValueError(
            f"level_weights ({text!r}) must be comma-separated non-negative numbers, one per "
            "level 0, 1, ..., not all 0, such as '1,1,2'"
        )
    if levels is not None and w.size != levels:
        raise ValueError(
            f"level_weights ({text!r}) has {w.size} entries but the task's training split has "
            f"levels 0..{levels - 1}: give {levels} weights"
        )
    return w


# ----------------------------------------------------------------------------------------------
# The plan of a warm start and running it
# ----------------------------------------------------------------------------------------------


@dataclass
class WarmStartPlan:
    """Everything a warm start computes from, resolved: the task and its examples, the level
    weights, the architecture and size, the schedule, the report's settings."""

    task: Any
    train: list[Any]
    test: list[Any]
    weights: np.ndarray  # [L] sampling weight of each level, sums to 1
    arch: str
    size: ModelSize
    schedule: Schedule
    eval_samples: int
    max_new_tokens: int
    score: Callable[..., Any] | None = None  # None: exact match (the tiny model's report)


@dataclass
class WarmStartResult:
    """What ``run_plan`` produced."""

    model: Any
    tokenizer: Any
    losses: list[float]
    train_seconds: float
    report: dict[str, Any]


def level_weights_for(train: list[Any], text: str) -> np.ndarray:
    """Normalised weights per level (``[max level + 1]``): ``text``'s, or every level present
    in ``train`` equally."""
    levels = np.array([ex.level for ex in train], dtype=np.int64)
    count = int(levels.max()) + 1
    given = parse_level_weights(text, count)
    w = given if given is not None else (np.bincount(levels, minlength=count) > 0).astype(float)
    present = np.bincount(levels, minlength=count) > 0
    if (w[present] <= 0).all():
        raise ValueError(
            f"level_weights ({text!r}) gives weight 0 to every level the training split holds "
            f"({np.flatnonzero(present).tolist()}): weight at least one of them"
        )
    return w / w.sum()


def plan_for(cfg: WarmStartConfig) -> WarmStartPlan:
    """The plan ``cfg`` describes: its task (``arithmetic`` from the ``warmup`` pool), the
    training examples of weighted levels, the held-out subset, the context and report length."""
    from trainers.grpo.evaluation import held_out_subset
    from trainers.models.tiny import build_tiny_tokenizer
    from trainers.tasks import make_task

    kwargs: dict[str, Any] = {}
    if cfg.task == "arithmetic":
        kwargs = {"num_train": cfg.task_size or ARITHMETIC_TRAIN, "pool": "warmup"}
        if cfg.report_split == "validation":
            kwargs["num_validation"] = ARITHMETIC_VALIDATION
    elif cfg.task_size is not None:
        raise ValueError(
            f"task_size ({cfg.task_size}) sizes the arithmetic task only; size {cfg.task!r} in "
            "its spec where it takes a size (e.g. rg:chain_sum?num_train=5000)"
        )
    task = make_task(cfg.task, seed=cfg.task_seed, **kwargs)
    if not task.train or not task.test:
        raise ValueError(
            f"task {cfg.task!r} has {len(task.train)} training and {len(task.test)} held-out "
            "examples: a warm start needs both"
        )
    if cfg.report_split == "validation" and not task.validation:
        raise ValueError(
            f"task {cfg.task!r} has no validation split to report on: use --report-split test, "
            "or a task with one (arithmetic, rg:<dataset>)"
        )
    weights = level_weights_for(task.train, cfg.level_weights)
    train = [ex for ex in task.train if ex.level < weights.size and weights[ex.level] > 0]
    reported = task.validation if cfg.report_split == "validation" else task.test
    test = held_out_subset(reported, cfg.eval_size)
    tok = build_tiny_tokenizer(model_max_length=1 << 30)  # measures: no length warning
    longest_answer = max(
        len(ids)
        for ids in tok(
            sorted({ex.answer for ex in [*task.train, *task.test]}), add_special_tokens=False
        ).input_ids
    )
    longest = (
        max(
            len(ids)
            for ids in tok(sorted({ex.prompt for ex in [*task.train, *task.test]})).input_ids
        )
        + longest_answer
        + 1
    )
    context = cfg.context or CONTEXT_STEP * math.ceil((longest + CONTEXT_MARGIN) / CONTEXT_STEP)
    if context < longest:
        raise ValueError(
            f"context ({cfg.context}) is shorter than the task's longest prompt + answer + </s> "
            f"({longest} tokens): pass --context {longest} or more (or 0 for the default)"
        )
    return WarmStartPlan(
        task=task,
        train=train,
        test=test,
        weights=weights,
        arch=cfg.arch,
        size=cfg.size(context),
        schedule=Schedule(
            steps=cfg.steps,
            batch_size=cfg.batch_size,
            lr=cfg.lr,
            weight_decay=cfg.weight_decay,
            warmup=cfg.warmup,
            seed=cfg.seed,
        ),
        eval_samples=cfg.eval_samples,
        max_new_tokens=cfg.max_new_tokens or longest_answer + 2,
        score=task.score,
    )


def run_plan(plan: WarmStartPlan, control: RunControl, console: Any) -> WarmStartResult:
    """Build the model, train it per ``plan`` (checkpoints and stops per ``control``) and
    evaluate it on the held-out examples; nothing is saved but the checkpoints."""
    from trainers.models.architectures import build_model
    from trainers.models.tiny import build_tiny_tokenizer
    from trainers.models.warm_start_report import evaluate

    tokenizer = build_tiny_tokenizer(model_max_length=plan.size.context)
    model = build_model(plan.arch, plan.size, plan.schedule.seed, tokenizer=tokenizer)
    input_ids, labels = encode_supervised(
        tokenizer, [ex.prompt for ex in plan.train], [ex.answer for ex in plan.train]
    )  # [N, T]
    rng = np.random.default_rng(plan.schedule.seed)
    stream = batch_stream(
        [ex.level for ex in plan.train],
        plan.weights,
        plan.schedule.steps,
        plan.schedule.batch_size,
        rng,
    )  # [steps, B]
    losses, seconds = train_supervised(
        model, tokenizer, input_ids, labels, stream, plan.schedule, control, console
    )
    report = evaluate(
        model,
        tokenizer,
        plan.test,
        num_samples=plan.eval_samples,
        max_new_tokens=plan.max_new_tokens,
        seed=plan.schedule.seed,
        score=plan.score,
    )
    model.eval()
    return WarmStartResult(model, tokenizer, losses, seconds, report)


# ----------------------------------------------------------------------------------------------
# The model card
# ----------------------------------------------------------------------------------------------


#: what a run executes, relative to the checkout's root: changes anywhere else (results,
#: documentation, the evidence a competition copies in as runs finish) leave a start clean
CODE_PATHS = ("adaroll_env", "agents", "trainers", "pyproject.toml")


def git_state(root: str | Path | None = None) -> dict[str, Any]:
    """``{"commit": sha, "dirty": bool, "code": digest}`` of the git checkout holding ``root``
    (default: this package's), all None outside one (or without git). ``dirty``: the code a run
    executes (``CODE_PATHS``) differs from the commit — a tracked file changed or an untracked one
    added. ``code``: a sha256 of the commit's git trees of ``CODE_PATHS``, the same for two
    commits that differ only outside the code (results, docs, scripts)."""
    import subprocess

    where = Path(root) if root is not None else Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=30
        )
        if commit.returncode != 0:
            return {"commit": None, "dirty": None, "code": None}
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=where, capture_output=True, text=True,
            timeout=30,
        )  # fmt: skip
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=normal", "--", *CODE_PATHS],
            cwd=top.stdout.strip() or where,
            capture_output=True,
            text=True,
            timeout=60,
        )
        trees = subprocess.run(
            ["git", "rev-parse", *(f"HEAD:{p}" for p in CODE_PATHS)],
            cwd=top.stdout.strip() or where,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None, "code": None}
    dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    code = (
        hashlib.sha256(trees.stdout.encode()).hexdigest()
        if trees.returncode == 0 and len(trees.stdout.split()) == len(CODE_PATHS)
        else None
    )
    return {"commit": commit.stdout.strip(), "dirty": dirty, "code": code}


def command_line(cfg: Any, command: str, *, resume: bool = False) -> str:
    """The ``adaroll <command> ...`` line that runs ``cfg`` (its fields that differ from the
    defaults), with ``--resume`` when asked."""
    args = ["adaroll", command]
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if f.name == "resume" or value == f.default:
            continue
        flag = "--" + f.name.replace("_", "-")
        if isinstance(value, bool):
            args.append(flag if value else "--no-" + flag[2:])
        else:
            args += [flag, "none" if value is None else str(value)]
    if resume:
        args.append("--resume")
    return shlex.join(args)


def invoked_or(cfg: Any, command: str) -> str:
    """The command line being run (``adaroll ...``), or ``cfg``'s when called from Python."""
    from trainers.cli import invoked_command

    return invoked_command() or command_line(cfg, command)


def resume_command(cfg: Any, command: str) -> str:
    """The command that continues ``cfg``'s run: the one being run with ``--resume``."""
    from trainers.cli import invoked_command

    running = invoked_command()
    if running is None:
        return command_line(cfg, command, resume=True)
    return running if " --resume" in f"{running} " else f"{running} --resume"


def model_card(
    *,
    plan: WarmStartPlan,
    result: WarmStartResult,
    directory: Path,
    task_spec: str,
    config: dict[str, Any],
    command: str,
    total_seconds: float,
) -> dict[str, Any]:
    """The model card (``MODEL_CARD``) of a finished warm start in ``directory``."""
    from adaroll_env.stats import library_versions
    from trainers.models.architectures import parameter_count
    from trainers.models.loading import weights_sha256

    k = result.report["k"]

    def figures(row: dict[str, Any]) -> dict[str, Any]:
        return {
            "level": row["level"],
            "n": row["n"],
            "pass@1": row["pass@1"],
            f"pass@{k}": row[f"pass@{k}"],
            "greedy": row["greedy"],
            "spread": row["spread"],
        }

    return {
        "card_version": 1,
        "recipe_version": RECIPE_VERSION,
        "task": task_spec,
        "architecture": plan.arch,
        "model_type": result.model.config.model_type,
        "size": {
            **dataclasses.asdict(plan.size),
            "intermediate_size": plan.size.mlp_width(plan.arch),
        },
        "parameters": parameter_count(result.model),
        "steps": plan.schedule.steps,
        "weights_sha256": weights_sha256(directory, length=64),
        "held_out": {
            "split": config.get("report_split", "test"),
            "k": k,
            "levels": [figures(r) for r in result.report["levels"]],
            "overall": figures(result.report["overall"]),
        },
        "loss": loss_summary(result.losses),
        "train_seconds": result.train_seconds,
        "total_seconds": total_seconds,
        "command": command,
        "git": git_state(),
        "config": config,
        "task_description": plan.task.describe(),
        "versions": library_versions(("torch", "transformers", "tokenizers")),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def save_model(result: WarmStartResult, directory: Path) -> None:
    """The model and tokenizer into ``directory``; the checkpoints and run file go."""
    directory.mkdir(parents=True, exist_ok=True)
    result.model.save_pretrained(directory)
    result.tokenizer.save_pretrained(directory)
    drop_checkpoints(directory)
    (directory / RUN_FILE).unlink(missing_ok=True)


def write_json_last(path: Path, record: dict[str, Any]) -> None:
    """Write ``record`` to ``path`` through a temporary file and a rename (a reader never sees a
    half-written marker)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(path)


# ----------------------------------------------------------------------------------------------
# adaroll warm-start
# ----------------------------------------------------------------------------------------------


def train_plan(
    cfg: Any,
    out: Path,
    label: str,
    make_plan: Callable[[Any], WarmStartPlan],
    *,
    task_spec: str,
    resume: bool,
    console: Any,
) -> tuple[WarmStartPlan, WarmStartResult, dict[str, Any]]:
    """What ``adaroll warm-start`` and ``adaroll pretrain-tiny`` share: the run control (periodic
    checkpoints, clean stop, resume command), the plan of ``cfg`` trained under it, the model
    saved and its card (``adaroll_model.json``) written; ``(plan, result, card)``."""
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    control = RunControl(
        directory=out,
        label=label,
        progress=cfg.progress,
        save_every=cfg.save_every,
        save_minutes=cfg.save_minutes,
        resume=resume,
        # a cache build resumes by itself: the same command again
        resume_command=(
            resume_command(cfg, label) if cfg.out is not None else invoked_or(cfg, label)
        ),
    )
    with torch_threads(cfg.threads):
        plan = make_plan(cfg)
        (out / RUN_FILE).write_text(json.dumps(cfg.recipe(), indent=2) + "\n")
        result = run_plan(plan, control, console)
        save_model(result, out)
        card = model_card(
            plan=plan,
            result=result,
            directory=out,
            task_spec=task_spec,
            config=dataclasses.asdict(cfg),
            command=invoked_or(cfg, label),
            total_seconds=time.perf_counter() - start,
        )
        write_json_last(out / MODEL_CARD, card)
    return plan, result, card


def train_and_save(cfg: WarmStartConfig, directory: str | Path, *, resume: bool) -> Path:
    """Warm-start per ``cfg`` into ``directory`` (resuming its checkpoint when ``resume``), print
    the report and write the model card last; the directory."""
    from rich.console import Console

    from trainers.models.warm_start_report import report_table

    console = Console()
    _, result, card = train_plan(
        cfg, Path(directory), "warm-start", plan_for, task_spec=cfg.task, resume=resume,
        console=console,
    )  # fmt: skip
    title = f"{cfg.arch} warm start on {cfg.task}, held-out ({cfg.report_split})"
    console.print(report_table(result.report, title=title))
    console.print(
        f"{card['parameters']:,} parameters; loss {card['loss']['first']:.3f} -> "
        f"{card['loss']['last']:.3f} in {cfg.steps} steps, {card['total_seconds']:.0f} s"
    )
    return Path(directory)


def _digest(cfg: WarmStartConfig) -> str:
    fields = cfg.recipe()
    if fields["report_split"] == "test":  # added later: its default keeps the earlier digests
        del fields["report_split"]
    fields["recipe_version"] = RECIPE_VERSION
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]


def warm_start_dir(cfg: WarmStartConfig) -> Path:
    """Where the warm start of ``cfg`` is cached: ``$ADAROLL_CACHE_DIR/models/<arch>-<task>-
    <digest>``; the digest hashes every field but ``RUN_CONTROL`` and the recipe version (a
    ``jsonl:PATH`` task is named by its path, not its contents)."""
    slug = re.sub(r"[^A-Za-z0-9_.]+", "-", cfg.task).strip("-")[:40] or "task"
    return cache_dir() / "models" / f"{cfg.arch}-{slug}-{_digest(cfg)}"


def is_complete(directory: Path) -> bool:
    """Whether ``directory`` holds a finished warm start (its model card)."""
    return (directory / MODEL_CARD).is_file()


def ensure_warm_start(cfg: WarmStartConfig, *, announce: bool = True) -> Path:
    """The cached warm start of ``cfg``, built once (under a file lock, atomically) if missing;
    a build stopped by a signal resumes from its checkpoint on the next call."""
    target = warm_start_dir(cfg)
    return build_once(
        target,
        complete=is_complete,
        build=lambda partial: train_and_save(cfg, partial, resume=True),
        what=f"the {cfg.arch} warm start on {cfg.task}",
        announce=announce,
    )


def prepare_out(out: Path, *, resume: bool, recipe: dict[str, Any], command: str) -> bool:
    """Get ``out`` ready for a run: whether to resume its checkpoint. An earlier finished model
    (or any other file) is moved to ``out/superseded/<UTC time>/``; an unfinished run is
    continued with ``resume`` (its recipe must match) and refused without it."""
    from adaroll_env.run_dirs import SUPERSEDED_DIR, set_aside

    checkpoint = latest_checkpoint(out) if not is_complete(out) else None
    if checkpoint is not None:
        if not resume:
            raise ValueError(
                f"{out} holds an unfinished warm start ({checkpoint.name}): pass --resume to "
                f"continue it, or choose another --out"
            )
        saved = out / RUN_FILE
        old = json.loads(saved.read_text()) if saved.is_file() else recipe
        changed = [f"{k}: {old.get(k)!r} -> {v!r}" for k, v in recipe.items() if old.get(k) != v]
        if changed:
            raise ValueError(
                f"--resume of {out} with other options than the run that stopped "
                f"({'; '.join(changed)}): resume with the same options ({command})"
            )
        return True
    if out.is_dir():
        kept = set_aside(out, [p.name for p in out.iterdir() if p.name != SUPERSEDED_DIR])
        if kept is not None:
            print(f"adaroll {command}: the earlier files of {out} are kept in {kept}")
    return False


def main(cfg: WarmStartConfig) -> Path:
    """``adaroll warm-start``: into ``--out`` (resuming with ``--resume``), or into the cache
    (reusing a finished build of the same recipe). SIGINT/SIGTERM stop it cleanly."""
    from rich.console import Console

    from trainers.models.warm_start_report import report_table
    from trainers.run import stopping

    with stopping.StopSignals():
        if cfg.out is not None:
            out = Path(cfg.out)
            if cfg.resume and is_complete(out):
                print(f"already finished: {out} (nothing to resume)")
                return out
            resume = prepare_out(out, resume=cfg.resume, recipe=cfg.recipe(), command="warm-start")
            path = train_and_save(cfg, out, resume=resume)
            Console().print(f"saved to {path}")
            stopping.clear()
            return path
        cached = is_complete(warm_start_dir(cfg))
        path = ensure_warm_start(cfg)
        stopping.clear()
    if cached:
        card = json.loads((path / MODEL_CARD).read_text())
        console = Console()
        held = card["held_out"]
        report = {"k": held["k"], "levels": held["levels"], "overall": held["overall"]}
        console.print(report_table(report, title=f"{cfg.arch} warm start, held-out (cached)"))
        console.print(f"already built: {path}")
    return path
