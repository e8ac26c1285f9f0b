"""The trainer tests' fixtures (``tiny_model_dir``, ``tiny_policy``) live in the root
``tests/conftest.py``, shared with ``tests/vllm``; this file keeps the ones only the trainer
tests use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def one_layer_llama() -> Callable[..., Any]:
    """A factory of one-layer, one-head ``LlamaConfig``s of width 64 (``kwargs`` set the rest).

    transformers is imported when the fixture is used, not when this conftest loads.
    """
    from transformers import LlamaConfig

    def make(**kwargs: Any) -> Any:
        shape = dict(hidden_size=64, intermediate_size=64, num_hidden_layers=1, head_dim=64)
        return LlamaConfig(**shape, num_attention_heads=1, num_key_value_heads=1, **kwargs)

    return make
