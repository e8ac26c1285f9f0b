"""Generation engines behind one interface (``Engine``): ``hf`` (transformers) and ``vllm``.

Importing this package is light; each engine imports its backend when built.
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
        raise ValueError(
            "engine 'vllm' is not available yet in this version of adaroll: use --engine hf"
        )
    raise ValueError(f"unknown engine {name!r}: choose one of {list(ENGINES)}")


__all__ = ["ENGINES", "Engine", "Generation", "SamplingSpec", "check_request", "make_engine"]
