"""``HFEngine`` against ``VLLMEngine`` on the same model: what ``scripts/bench_engines.py`` runs.

Formerly ``trainers/engines/bench.py``: a benchmark that builds trainers belongs above them.

Needs both transformers and vLLM (``make bench-engines`` runs it in ``.venv-vllm``). Measured in
one process, on the same policy weights, prompts (held-out arithmetic, all levels) and group sizes:

* **generation**: completion tokens per second of one ``generate`` call per row (uniform group
  sizes, and ragged counts drawn with mean ``group_size``), the two engines alternating in
  ``repeats`` slices (which goes first alternates too) after one untimed call each; medians,
  and the best slice (the one least disturbed by other work on the machine);
* **GRPO step**: two ``GRPOTrainer`` copies from the same weights and seed, one per engine,
  alternating steps; median step, generation and update seconds (the first step of each is
  not counted), the vLLM engine's weight-sync time, and the trainer's ``logprob_diff`` (mean
  ``|engine - trainer|`` log-prob per trained token);
* **log-prob agreement**: the vLLM engine's log-probs of a sampled batch against the trainer's
  recomputation (``trainers.grpo.per_token_logps``), mean and max absolute difference.

>>> result = main(EngineBenchConfig(prompts=8, repeats=1, grpo_steps=2))  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainers.engines.base import Generation, SamplingSpec
from trainers.grpo.config import check_config_int


@dataclass
class EngineBenchConfig:
    """Configuration of the HF-vs-vLLM engine benchmark."""

    model: str = field(default="tiny", metadata={"help": "'tiny' or a local model directory"})
    prompts: int = field(default=64, metadata={"help": "held-out prompts per generate call"})
    rows: str = field(
        default="ragged,4,16",
        metadata={"help": "group sizes per row: an integer (uniform) or 'ragged', comma-separated"},
    )
    group_size: int = field(default=8, metadata={"help": "mean group size of the ragged row"})
    max_new_tokens: int = field(default=8, metadata={"help": "completion length limit"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature"})
    repeats: int = field(default=9, metadata={"help": "alternating slices per row (medians)"})
    grpo_steps: int = field(
        default=10, metadata={"help": "GRPO steps per engine, alternating (0: skip)"}
    )
    batch_size: int = field(default=16, metadata={"help": "GRPO prompts per step"})
    grpo_group_size: int = field(default=8, metadata={"help": "GRPO rollouts per prompt"})
    seed: int = field(default=0, metadata={"help": "seed of prompts, counts and sampling"})
    kv_cache_gib: float = field(default=1.0, metadata={"help": "vLLM KV cache (GiB)"})
    out: str = field(
        default="runs/bench_engines.json", metadata={"help": "JSON file for the results"}
    )

    def __post_init__(self) -> None:
        for name in ("prompts", "group_size", "max_new_tokens", "repeats", "batch_size"):
            check_config_int(name, getattr(self, name), 1)
        check_config_int("grpo_steps", self.grpo_steps, 0)
        for row in self.row_list():
            if row != "ragged" and not (row.isdigit() and int(row) >= 1):
                raise ValueError(
                    f"rows holds {row!r}: give positive integers or 'ragged', comma-separated"
                )

    def row_list(self) -> list[str]:
        """The rows asked for, in order."""
        return [r.strip() for r in self.rows.split(",") if r.strip()]


def row_counts(row: str, prompts: int, group_size: int, seed: int) -> list[int]:
    """Samples per prompt of a row: ``G`` each, or ragged counts in ``0..2G`` with mean ``G``."""
    if row != "ragged":
        return [int(row)] * prompts
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2 * group_size + 1, size=prompts).tolist()


def _model_dir(name: str) -> Path:
    if name == "tiny":
        from trainers.models.loading import ensure_tiny_model

        return ensure_tiny_model()
    return Path(name).expanduser()


def _median(values: list[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return statistics.median(finite) if finite else float("nan")


def _rate(gen: Generation) -> float:
    return gen.num_tokens / max(gen.seconds, 1e-9)


def logprob_agreement(model: Any, prompts: list[list[int]], gen: Generation, t: float) -> dict:
    """Mean and max ``|engine - trainer|`` log-prob per token of ``gen``."""
    from trainers.grpo.objective import per_token_logps

    diffs: list[np.ndarray] = []
    with torch.no_grad():
        for i, c, lp in zip(gen.prompt_index, gen.completion_ids, gen.logprobs, strict=True):
            p = prompts[int(i)]
            logits = model(torch.tensor([p + c])).logits[:, len(p) - 1 : -1]  # [1, T, V]
            ref = per_token_logps(logits, torch.tensor([c]), temperature=t)[0]  # [T]
            diffs.append(np.abs(ref.numpy() - lp))
    flat = np.concatenate(diffs) if diffs else np.zeros(0)
    return {
        "tokens": int(flat.size),
        "mean_abs_diff": float(flat.mean()) if flat.size else float("nan"),
        "max_abs_diff": float(flat.max()) if flat.size else float("nan"),
    }


def bench_generation(
    cfg: EngineBenchConfig, engines: dict[str, Any], prompts: list[list[int]]
) -> list[dict[str, Any]]:
    """Tokens/s of each engine per row, alternating slices; medians."""
    spec = SamplingSpec(max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature)
    names = list(engines)
    rows: list[dict[str, Any]] = []
    for r, row in enumerate(cfg.row_list()):
        counts = row_counts(row, len(prompts), cfg.group_size, cfg.seed + r)
        for engine in engines.values():  # warm-up, untimed
            engine.generate(prompts, counts, spec, seed=cfg.seed)
        rates: dict[str, list[float]] = {n: [] for n in names}
        seconds: dict[str, list[float]] = {n: [] for n in names}
        for k in range(cfg.repeats):
            for name in names if k % 2 == 0 else names[::-1]:
                gen = engines[name].generate(prompts, counts, spec, seed=cfg.seed + 1 + k)
                rates[name].append(_rate(gen))
                seconds[name].append(gen.seconds)
        entry: dict[str, Any] = {
            "row": row,
            "prompts": len(prompts),
            "completions": int(sum(counts)),
        }
        for name in names:
            entry[f"{name}_tokens_per_s"] = _median(rates[name])
            entry[f"{name}_best_tokens_per_s"] = max(rates[name])  # least disturbed slice
            entry[f"{name}_seconds"] = _median(seconds[name])
        entry["speedup"] = entry["vllm_tokens_per_s"] / entry["hf_tokens_per_s"]
        rows.append(entry)
    return rows


def bench_grpo(
    cfg: EngineBenchConfig, model_dir: Path, vllm_engine: Any, policies: dict[str, Any], tok: Any
) -> dict[str, Any]:
    """Alternating GRPO steps of two trainers, one per engine, from the same weights."""
    from trainers.grpo import GRPOConfig
    from trainers.grpo.trainer import GRPOTrainer

    trainers: dict[str, GRPOTrainer] = {}
    for name in ("hf", "vllm"):
        tcfg = GRPOConfig(
            model=str(model_dir),
            engine=name,  # type: ignore[arg-type]
            batch_size=cfg.batch_size,
            group_size=cfg.grpo_group_size,
            max_completion_length=cfg.max_new_tokens,
            temperature=cfg.temperature,
            seed=cfg.seed,
            eval_every=0,
            tensorboard=False,
            progress=False,
            device="cpu",
        )
        engine = vllm_engine if name == "vllm" else None
        trainers[name] = GRPOTrainer(tcfg, model=policies[name], tokenizer=tok, engine=engine)
    vllm_engine.sync_weights(trainers["vllm"].policy)
    reports: dict[str, list[Any]] = {"hf": [], "vllm": []}
    syncs: list[float] = []
    for k in range(cfg.grpo_steps):
        for name in ("hf", "vllm") if k % 2 == 0 else ("vllm", "hf"):
            reports[name].append(trainers[name].train_step())
            if name == "vllm":
                syncs.append(vllm_engine.last_sync_seconds)
    out: dict[str, Any] = {"steps": cfg.grpo_steps, "sync_seconds": _median(syncs[1:] or syncs)}
    for name, reps in reports.items():
        timed = reps[1:] or reps  # the first step of each warms up
        out[name] = {
            "step_seconds": _median([r.step_seconds for r in timed]),
            "gen_seconds": _median([r.gen_seconds for r in timed]),
            "train_seconds": _median([r.train_seconds for r in timed]),
            "tokens_per_s": _median([r.tokens_per_s for r in timed]),
            "logprob_diff": _median([r.logprob_diff for r in reps]),
            "rollouts": int(sum(r.rollouts for r in reps)),
        }
    return out


def main(cfg: EngineBenchConfig) -> dict[str, Any]:
    """Run the benchmark, print a table and write the JSON; returns the results."""
    from adaroll_env.stats import library_versions
    from trainers.engines.hf import HFEngine
    from trainers.engines.vllm import VLLMEngine
    from trainers.models.loading import load_policy
    from trainers.run.grpo_command import TRAINER_PACKAGES
    from trainers.tasks import make_task

    model_dir = _model_dir(cfg.model)
    policy_hf, tok = load_policy(str(model_dir))
    policy_vllm, _ = load_policy(str(model_dir))
    for policy in (policy_hf, policy_vllm):
        policy.eval()
    vllm_engine = VLLMEngine(
        policy_vllm, tok, model_path=model_dir, seed=cfg.seed, kv_cache_gib=cfg.kv_cache_gib
    )
    try:
        engines = {"hf": HFEngine(policy_hf, tok), "vllm": vllm_engine}
        test = make_task("arithmetic", seed=cfg.seed).test
        pick = np.linspace(0, len(test) - 1, min(cfg.prompts, len(test))).round().astype(int)
        prompts = [list(tok(test[i].prompt).input_ids) for i in pick]
        generation = bench_generation(cfg, engines, prompts)
        spec = SamplingSpec(max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature)
        sample = vllm_engine.generate(prompts, [4] * len(prompts), spec, seed=cfg.seed)
        agreement = logprob_agreement(policy_vllm, prompts, sample, cfg.temperature)
        sync = []
        for _ in range(cfg.repeats):
            vllm_engine.sync_weights(policy_vllm)
            sync.append(vllm_engine.last_sync_seconds)
        grpo = (
            bench_grpo(cfg, model_dir, vllm_engine, {"hf": policy_hf, "vllm": policy_vllm}, tok)
            if cfg.grpo_steps
            else None
        )
        startup = vllm_engine.startup_seconds
    finally:
        vllm_engine.close()
    result: dict[str, Any] = {
        "config": dataclasses.asdict(cfg),
        "model_dir": model_dir.name,
        "parameters": int(sum(p.numel() for p in policy_hf.parameters())),
        "threads": torch.get_num_threads(),
        "versions": library_versions(TRAINER_PACKAGES),
        "generation": generation,
        "logprob_agreement": agreement,
        "sync_seconds": _median(sync),
        "vllm_startup_seconds": startup,
        "grpo": grpo,
    }
    out = Path(cfg.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print_results(cfg, result)
    return result


def print_results(cfg: EngineBenchConfig, result: dict[str, Any]) -> None:
    """The generation table and the GRPO step / weight sync / log-prob table."""
    from rich.console import Console
    from rich.table import Table

    generation, grpo = result["generation"], result["grpo"]
    agreement, startup = result["logprob_agreement"], result["vllm_startup_seconds"]
    console = Console(width=max(Console().width, 100))
    table = Table(title=f"HF vs vLLM engine — {cfg.model}, {cfg.max_new_tokens} new tokens")
    for col in (
        "group sizes",
        "samples",
        "HF tok/s",
        "vLLM tok/s",
        "vLLM/HF",
        "best HF",
        "best vLLM",
    ):
        table.add_column(col, justify="right")
    for r in generation:
        table.add_row(
            f"{r['prompts']} × {r['row']}",
            str(r["completions"]),
            f"{r['hf_tokens_per_s']:,.0f}",
            f"{r['vllm_tokens_per_s']:,.0f}",
            f"{r['speedup']:.2f}",
            f"{r['hf_best_tokens_per_s']:,.0f}",
            f"{r['vllm_best_tokens_per_s']:,.0f}",
        )
    console.print(table)
    extra = Table(title="GRPO step and weight sync (medians)")
    extra.add_column("metric")
    extra.add_column("HF", justify="right")
    extra.add_column("vLLM", justify="right")
    if grpo is not None:
        for key, label in (
            ("step_seconds", "GRPO step (s)"),
            ("gen_seconds", "  generation (s)"),
            ("train_seconds", "  update (s)"),
            ("logprob_diff", "|engine − trainer| log-prob / token"),
        ):
            extra.add_row(label, f"{grpo['hf'][key]:.3g}", f"{grpo['vllm'][key]:.3g}")
    extra.add_row("weight sync (s)", "0 (same module)", f"{result['sync_seconds']:.3g}")
    extra.add_row("vLLM start-up (s)", "", f"{startup:.1f}")
    extra.add_row(
        f"|vLLM − trainer| log-prob, {agreement['tokens']} tokens: mean / max",
        "",
        f"{agreement['mean_abs_diff']:.1e} / {agreement['max_abs_diff']:.1e}",
    )
    console.print(extra)
    console.print(f"results written to {cfg.out}")
