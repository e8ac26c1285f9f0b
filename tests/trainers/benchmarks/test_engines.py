"""trainers.benchmarks.engines without vLLM: rows, the config, medians, the log-prob agreement,
the alternating generation benchmark on scripted engines, and the printed tables.

``main`` and ``bench_grpo`` need vLLM: tests/vllm/test_bench_engines.py runs them.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from trainers.benchmarks.engines import (
    EngineBenchConfig,
    _median,
    _model_dir,
    _rate,
    bench_generation,
    logprob_agreement,
    print_results,
    row_counts,
)
from trainers.engines.base import Generation


def test_row_counts():
    assert row_counts("4", 3, 8, 0) == [4, 4, 4]
    ragged = row_counts("ragged", 6, 8, 3)
    assert ragged == np.random.default_rng(3).integers(0, 17, size=6).tolist()
    assert row_counts("ragged", 6, 8, 4) != ragged


def test_config_checks_and_rows():
    assert EngineBenchConfig(rows=" ragged, 4 ,,16").row_list() == ["ragged", "4", "16"]
    for bad in ("ragged,x", "0", "-2", "4.5"):
        with pytest.raises(ValueError) as exc:
            EngineBenchConfig(rows=bad)
        assert "give positive integers or 'ragged', comma-separated" in str(exc.value)
    with pytest.raises(ValueError, match=r"rows holds 'x'"):
        EngineBenchConfig(rows="4,x")
    with pytest.raises(ValueError, match=r"^prompts must be an integer >= 1, got 0$"):
        EngineBenchConfig(prompts=0)
    with pytest.raises(ValueError, match=r"^grpo_steps must be an integer >= 0, got -1$"):
        EngineBenchConfig(grpo_steps=-1)
    EngineBenchConfig(grpo_steps=0)  # skips the GRPO part


def test_medians_rates_and_model_dirs(tmp_path, monkeypatch):
    assert _median([3.0, float("nan"), 1.0, 2.0]) == 2.0
    assert math.isnan(_median([float("nan")])) and math.isnan(_median([]))
    gen = SimpleNamespace(num_tokens=50, seconds=0.5)
    assert _rate(gen) == 100.0  # type: ignore[arg-type]
    assert _rate(SimpleNamespace(num_tokens=3, seconds=0.0)) == pytest.approx(3e9)  # type: ignore[arg-type]
    monkeypatch.setenv("HOME", str(tmp_path))
    assert _model_dir("~/m") == tmp_path / "m"
    assert _model_dir("/abs/dir") == Path("/abs/dir")


class _Table(torch.nn.Module):
    """``logits[t] = W[token t]`` with ``W[i, j] = j``: the log-probs are known in closed form."""

    def forward(self, ids):
        w = torch.arange(5.0).expand(5, 5)
        return SimpleNamespace(logits=w[ids])


def test_logprob_agreement_by_hand():
    log_z = math.log(sum(math.exp(j) for j in range(5)))
    # the trainer's log-prob of token j at temperature 1 is j - log Z, whatever came before
    gen = Generation(
        prompt_index=np.array([0, 1]),
        completion_ids=[[3, 4], [1]],
        texts=["", ""],
        logprobs=[np.array([3 - log_z, 4 - log_z + 0.25]), np.array([1 - log_z - 0.5])],
        truncated=np.array([True, True]),
    )
    out = logprob_agreement(_Table(), [[0], [2, 2]], gen, 1.0)
    assert out["tokens"] == 3
    assert out["mean_abs_diff"] == pytest.approx(0.75 / 3, abs=1e-6)
    assert out["max_abs_diff"] == pytest.approx(0.5, abs=1e-6)
    empty = Generation(np.zeros(0, dtype=np.int64), [], [], [], np.zeros(0, dtype=bool))
    nothing = logprob_agreement(_Table(), [[0]], empty, 1.0)
    assert nothing["tokens"] == 0 and math.isnan(nothing["mean_abs_diff"])


class _Scripted:
    """An engine whose calls take the scripted seconds, recorded in one shared log."""

    def __init__(self, name, seconds, log):
        self.name, self.seconds, self.log = name, list(seconds), log

    def generate(self, prompts, counts, sampling, *, seed):
        self.log.append((self.name, list(counts), seed))
        n = int(sum(counts))
        return Generation(
            prompt_index=np.repeat(np.arange(len(prompts)), counts),
            completion_ids=[[7, 2]] * n,
            texts=[""] * n,
            logprobs=[np.zeros(2)] * n,
            truncated=np.zeros(n, dtype=bool),
            seconds=self.seconds.pop(0),
        )


def test_bench_generation_alternates_and_takes_medians():
    log: list = []
    # per engine: an untimed warm-up call, then three timed slices
    engines = {"hf": _Scripted("hf", [9.0, 1.0, 2.0, 4.0], log),
               "vllm": _Scripted("vllm", [9.0, 0.5, 0.25, 1.0], log)}  # fmt: skip
    cfg = EngineBenchConfig(rows="2", repeats=3, seed=10)
    (row,) = bench_generation(cfg, engines, [[1, 5], [1, 6], [1, 7]])
    # warm-up in order, then the slices alternate which engine goes first
    assert [name for name, _, _ in log] == ["hf", "vllm", "hf", "vllm", "vllm", "hf", "hf", "vllm"]
    assert [seed for _, _, seed in log] == [10, 10, 11, 11, 12, 12, 13, 13]
    assert all(counts == [2, 2, 2] for _, counts, _ in log)
    # 6 completions of 2 tokens each: 12 tokens per call
    assert row == {
        "row": "2",
        "prompts": 3,
        "completions": 6,
        "hf_tokens_per_s": 6.0,  # median of 12, 6, 3
        "hf_best_tokens_per_s": 12.0,
        "hf_seconds": 2.0,
        "vllm_tokens_per_s": 24.0,  # median of 24, 48, 12
        "vllm_best_tokens_per_s": 48.0,
        "vllm_seconds": 0.5,
        "speedup": 4.0,
    }


def test_print_results_tables(capsys):
    cfg = EngineBenchConfig(model="tiny", max_new_tokens=8, out="x.json")
    gen_row = {"row": "ragged", "prompts": 4, "completions": 30, "hf_tokens_per_s": 1234.4,
               "vllm_tokens_per_s": 5678.9, "speedup": 4.6, "hf_best_tokens_per_s": 1300.0,
               "vllm_best_tokens_per_s": 6000.0}  # fmt: skip
    side = {"step_seconds": 1.5, "gen_seconds": 0.5, "train_seconds": 0.25, "logprob_diff": 2e-6}
    result = {"generation": [gen_row], "grpo": {"hf": side, "vllm": side},
              "logprob_agreement": {"tokens": 120, "mean_abs_diff": 1.5e-6, "max_abs_diff": 3e-5},
              "vllm_startup_seconds": 12.34, "sync_seconds": 0.0123}  # fmt: skip
    print_results(cfg, result)
    out = capsys.readouterr().out
    assert "HF vs vLLM engine — tiny, 8 new tokens" in out
    for cell in ("4 × ragged", "1,234", "5,679", "4.60", "1,300", "6,000"):
        assert cell in out, cell
    assert "0.0123" in out and "12.3" in out and "1.5e-06 / 3.0e-05" in out
    assert "120 tokens" in out and "results written to x.json" in out
