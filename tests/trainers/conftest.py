"""Shared fixtures of the trainer tests: the warm-started tiny model, built once and cached."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    """The warm-started tiny model directory (default ``PretrainConfig``).

    Built on first use into the adaroll cache (``$ADAROLL_CACHE_DIR/models/tiny-<digest>``), so
    later test sessions reuse it; a file lock makes concurrent xdist workers build it once.
    """
    from trainers.models import ensure_tiny_model

    return ensure_tiny_model()


@pytest.fixture
def tiny_policy(tiny_model_dir: Path):
    """A fresh ``(model, tokenizer)`` of the tiny model for one test (safe to train in place)."""
    from trainers.models import load_policy

    return load_policy(str(tiny_model_dir))
