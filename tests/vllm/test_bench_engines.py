"""``scripts/bench_engines.py``'s library code runs end to end on a small config."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="needs vLLM: `make test-vllm` runs these in .venv-vllm")

from trainers.benchmarks.engines import EngineBenchConfig, main, row_counts


def test_row_counts_and_config_checks() -> None:
    assert row_counts("4", 3, 8, 0) == [4, 4, 4]
    ragged = row_counts("ragged", 200, 8, 0)
    assert min(ragged) >= 0 and max(ragged) <= 16 and abs(sum(ragged) / 200 - 8) < 1.0
    assert ragged == row_counts("ragged", 200, 8, 0)
    with pytest.raises(ValueError, match="rows"):
        EngineBenchConfig(rows="ragged,x")


def test_bench_engines_measures_both_engines(tiny_dir: Path, tmp_path: Path, kv_gib: float) -> None:
    out = tmp_path / "bench.json"
    cfg = EngineBenchConfig(
        model=str(tiny_dir),
        prompts=8,
        rows="ragged,2",
        repeats=1,
        grpo_steps=2,
        batch_size=4,
        grpo_group_size=4,
        kv_cache_gib=kv_gib,
        out=str(out),
    )
    result = main(cfg)
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    assert [r["row"] for r in result["generation"]] == ["ragged", "2"]
    for r in result["generation"]:
        assert r["hf_tokens_per_s"] > 0 and r["vllm_tokens_per_s"] > 0
    assert result["logprob_agreement"]["mean_abs_diff"] < 1e-4
    assert 0 < result["sync_seconds"] < 5
    for name in ("hf", "vllm"):
        assert result["grpo"][name]["step_seconds"] > 0
        assert result["grpo"][name]["rollouts"] == 2 * 16
    lp = result["grpo"]["vllm"]["logprob_diff"]
    assert math.isnan(lp) or lp < 1e-4
