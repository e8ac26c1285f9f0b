"""Tests of ``VLLMEngine`` against a real vLLM (``make test-vllm``: vLLM's CPU build in .venv-vllm).

Without vLLM (the main ``make test`` environment) every module here skips itself at import
(``pytest.importorskip`` at the top of each ``test_*.py``; a skip raised in this conftest would
crash ``pytest tests/vllm`` instead of skipping, since pytest loads it before collecting). One
engine is built per session (start-up takes seconds) and shared; tests that change weights sync
the policy they use into it first.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine core in-process

#: KV cache of each engine the tests build (GiB): the tiny model needs little
KV_GIB = 0.25


@pytest.fixture(scope="session")
def kv_gib() -> float:
    """KV-cache GiB for the engines a test builds itself."""
    return KV_GIB


@pytest.fixture(scope="session")
def tiny_dir(tiny_model_dir: Path) -> Path:
    """The warm-started tiny model's directory (the root conftest's ``tiny_model_dir``)."""
    return tiny_model_dir


@pytest.fixture(scope="session")
def shared_engine(tiny_dir: Path) -> Iterator[Any]:
    """One ``VLLMEngine`` on the tiny model for the whole session."""
    from trainers.engines.vllm import VLLMEngine
    from trainers.models.loading import load_policy

    model, tok = load_policy(str(tiny_dir))
    engine = VLLMEngine(model, tok, model_path=tiny_dir, seed=0, kv_cache_gib=KV_GIB)
    yield engine
    engine.close()


@pytest.fixture
def synced(shared_engine: Any, tiny_dir: Path) -> tuple[Any, Any, Any]:
    """``(engine, policy, tokenizer)``: a fresh tiny policy, its weights synced into the engine."""
    from trainers.models.loading import load_policy

    model, tok = load_policy(str(tiny_dir))
    model.eval()
    shared_engine.sync_weights(model)
    return shared_engine, model, tok


@pytest.fixture(scope="session")
def family_dir() -> Any:
    """``arch -> directory`` of a small warm start of that family (the suite's cache; the same
    smoke recipe as the trainer tests' ``family_model_dir``)."""
    from trainers.models.warm_start_task import WarmStartConfig, ensure_warm_start

    def build(arch: str) -> Path:
        cfg = WarmStartConfig(arch=arch, task="arithmetic", task_size=2000, steps=30,
                              hidden_size=64, num_layers=1, eval_size=8, eval_samples=2,
                              progress=False, save_minutes=0.0)  # fmt: skip
        return Path(ensure_warm_start(cfg, announce=False))

    return build
