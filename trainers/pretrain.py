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
import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainers.models import (
    TINY_METADATA_FILE,
    TINY_RECIPE_VERSION,
    TinyConfig,
    build_tiny_model,
    build_tiny_tokenizer,
)

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
    full = [encoded[t] for t in texts]
    prompt_lens = [len(encoded[p]) for p in prompts]
    length = max(len(ids) for ids in full) + 1
    rows, targets = [], []
    for ids, n_prompt in zip(full, prompt_lens, strict=True):
        fill = length - len(ids) - 1
        rows.append([*ids, eos] + [pad] * fill)
        targets.append([IGNORE_INDEX] * n_prompt + ids[n_prompt:] + [eos] + [IGNORE_INDEX] * fill)
    input_ids = torch.tensor(rows, dtype=torch.long)  # [N, T]
    labels = torch.tensor(targets, dtype=torch.long)  # [N, T]
    return input_ids, labels


# ----------------------------------------------------------------------------------------------
# Sampling for the report
# ----------------------------------------------------------------------------------------------


@torch.no_grad()
def sample_completions(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    *,
    num_samples: int = 1,
    temperature: float = 1.0,
    max_new_tokens: int = 6,
    generator: torch.Generator | None = None,
    batch_size: int = 1024,
) -> list[str]:
    """``num_samples`` completions per prompt (prompt-major), decoded without special tokens.

    Temperature 0 is greedy. Pure ancestral sampling (no top-k/top-p), left padding with
    position ids counted over real tokens, KV cache, stop at ``</s>``.
    """
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    rows = [p for p in prompts for _ in range(num_samples)]
    was_training = model.training
    model.eval()
    out: list[str] = []
    try:
        for lo in range(0, len(rows), batch_size):
            chunk = rows[lo : lo + batch_size]
            enc = tokenizer(chunk, padding=True, padding_side="left", return_tensors="pt")
            ids, mask = enc.input_ids, enc.attention_mask  # [b, P]
            positions = (mask.cumsum(-1) - 1).clamp(min=0)  # [b, P]
            done = torch.zeros(len(chunk), dtype=torch.bool)  # [b]
            new = torch.full((len(chunk), max_new_tokens), pad, dtype=torch.long)  # [b, N]
            cache = None
            step_ids, step_pos = ids, positions
            for t in range(max_new_tokens):
                res = model(
                    input_ids=step_ids,
                    attention_mask=mask,
                    position_ids=step_pos,
                    cache=cache,
                    use_cache=True,
                    logits_to_keep=1,
                )
                cache = res.cache
                logits = res.logits[:, -1].float()  # [b, V]
                if temperature == 0:
                    token = logits.argmax(-1)  # [b]
                else:
                    probs = torch.softmax(logits / temperature, dim=-1)  # [b, V]
                    token = torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # [b]
                token = torch.where(done, torch.full_like(token, pad), token)
                new[:, t] = token
                done |= token == eos
                if bool(done.all()):
                    break
                step_ids = token[:, None]  # [b, 1]
                step_pos = step_pos[:, -1:] + 1  # [b, 1]
                mask = torch.cat([mask, torch.ones_like(step_ids)], dim=1)  # [b, P+t+1]
            out.extend(tokenizer.batch_decode(new.tolist(), skip_special_tokens=True))
    finally:
        model.train(was_training)
    return out


def evaluate(
    model: Any,
    tokenizer: Any,
    examples: Sequence[Any],
    *,
    num_samples: int,
    max_new_tokens: int,
    seed: int,
) -> dict[str, Any]:
    """Greedy accuracy and sampled pass rates on ``examples``, overall and per level.

    Returns ``{"levels": [row, ...], "overall": row, "pass_rates": [...]}``, a row holding
    ``level, n, greedy, pass@1, pass@k, spread`` (``spread``: fraction of prompts with a sampled
    pass rate strictly between 0 and 1); ``pass_rates`` is the per-prompt sampled pass rate in
    the order of ``examples``.
    """
    from trainers.tasks import exact_match

    prompts = [ex.prompt for ex in examples]
    greedy = sample_completions(
        model, tokenizer, prompts, temperature=0.0, max_new_tokens=max_new_tokens
    )
    gen = torch.Generator().manual_seed(seed)
    sampled = sample_completions(
        model,
        tokenizer,
        prompts,
        num_samples=num_samples,
        temperature=1.0,
        max_new_tokens=max_new_tokens,
        generator=gen,
    )
    greedy_ok = np.array([exact_match(c, ex) for c, ex in zip(greedy, examples, strict=True)])
    repeated = [ex for ex in examples for _ in range(num_samples)]
    sampled_ok = np.array(
        [exact_match(c, ex) for c, ex in zip(sampled, repeated, strict=True)]
    ).reshape(len(examples), num_samples)  # [n, k]
    rates = sampled_ok.mean(axis=1)  # [n]
    levels = np.array([ex.level for ex in examples])

    def row(select: np.ndarray, level: int | str) -> dict[str, Any]:
        r = rates[select]
        return {
            "level": level,
            "n": int(select.sum()),
            "greedy": float(greedy_ok[select].mean()),
            "pass@1": float(r.mean()),
            f"pass@{num_samples}": float((r > 0).mean()),
            "spread": float(((r > 0) & (r < 1)).mean()),
        }

    return {
        "k": num_samples,
        "levels": [row(levels == lv, int(lv)) for lv in np.unique(levels)],
        "overall": row(np.ones(len(examples), dtype=bool), "all"),
        "pass_rates": [float(x) for x in rates],
    }


def report_table(report: dict[str, Any], title: str = "tiny warm start, held-out") -> Any:
    """A rich Table of an ``evaluate`` report, one row per level and an overall row."""
    from rich.table import Table

    k = report["k"]
    table = Table(title=title)
    for name in ("level", "n", "greedy", "pass@1 (T=1)", f"pass@{k} (T=1)", "0<rate<1"):
        table.add_column(name, justify="right")
    for row in [*report["levels"], report["overall"]]:
        table.add_row(
            str(row["level"]),
            str(row["n"]),
            f"{row['greedy']:.2f}",
            f"{row['pass@1']:.2f}",
            f"{row[f'pass@{k}']:.2f}",
            f"{row['spread']:.2f}",
        )
    return table


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


def train_and_save(cfg: PretrainConfig, directory: str | os.PathLike | None = None) -> Path:
    """Train the tiny model per ``cfg``, save it into ``directory`` (default ``cfg.out``), print
    the report table and return the directory.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from trainers.tasks import make_task

    if directory is None and cfg.out is None:
        raise ValueError("train_and_save needs a directory or cfg.out; main(cfg) uses the cache")
    out = Path(directory if directory is not None else cfg.out)  # type: ignore[arg-type]
    console = Console()
    start = time.perf_counter()
    threads_before = torch.get_num_threads()
    torch.set_num_threads(cfg.threads or os.cpu_count() or 1)
    try:
        # The full task (all levels), so that its held-out split is the trainer's; the level
        # filter applies to the training examples only. The warm start draws from the
        # 'warmup' half of the expressions: GRPO's prompts ('rl' half) stay unseen.
        task = make_task(
            "arithmetic",
            seed=cfg.seed,
            num_train=cfg.num_train,
            num_test=cfg.num_test,
            pool="warmup",
        )
        weights = cfg.weights()
        train = [ex for ex in task.train if weights[ex.level] > 0]
        tokenizer = build_tiny_tokenizer()
        model = build_tiny_model(cfg.model_config(), cfg.seed, tokenizer=tokenizer)
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
        # Every batch of the run, drawn at once: level l has probability weights[l], spread
        # evenly over its examples.
        levels = np.array([ex.level for ex in train])
        per_level = np.bincount(levels, minlength=weights.size)
        p = weights[levels] / per_level[levels]
        stream = rng.choice(len(train), size=(cfg.steps, cfg.batch_size), p=p / p.sum())
        progress = Progress(
            TextColumn("[bold]pretrain-tiny"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]:.3f}"),
            TimeElapsedColumn(),
            disable=not cfg.progress,
            transient=True,
            console=console,
        )
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
            "report": report,
        }
        # Written last: its presence marks a complete model directory.
        (out / TINY_METADATA_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    finally:
        torch.set_num_threads(threads_before)
    console.print(report_table(report))
    console.print(
        f"loss {meta['loss']['first']:.3f} -> {meta['loss']['last']:.3f} in {cfg.steps} steps, "
        f"{meta['total_seconds']:.0f} s; saved to {out}"
    )
    return out


def main(cfg: PretrainConfig) -> Path:
    """Warm-start the tiny model; with ``out`` unset, into the cache that ``load_policy('tiny')``
    reads (reusing a cached build of the same config).
    """
    if cfg.out is not None:
        return train_and_save(cfg)
    from rich.console import Console

    from trainers.models import ensure_tiny_model, tiny_model_dir

    cached = (tiny_model_dir(cfg) / TINY_METADATA_FILE).is_file()
    path = ensure_tiny_model(cfg)
    if cached:
        meta = json.loads((path / TINY_METADATA_FILE).read_text())
        console = Console()
        console.print(report_table(meta["report"], title="tiny warm start, held-out (cached)"))
        console.print(f"already built: {path}")
    return path
