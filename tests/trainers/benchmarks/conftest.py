"""The benchmark tests' model: a randomly initialised tiny model saved as a local directory."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised tiny model saved as a local Hugging Face directory (no training)."""
    from trainers.models.loading import build_tiny_model, build_tiny_tokenizer

    out = tmp_path_factory.mktemp("tiny-random")
    tokenizer = build_tiny_tokenizer()
    build_tiny_model(seed=0, tokenizer=tokenizer).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
