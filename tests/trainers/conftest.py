"""The trainer tests' fixtures (``tiny_model_dir``, ``tiny_policy``) live in the root
``tests/conftest.py``, shared with ``tests/vllm``; this file keeps the ones only the trainer
tests use: ``one_layer_llama``, and the model families' smoke warm starts (``family_model_dir``,
``model_case``) that the trainer paths' tests are parametrised over."""

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


#: a warm start of a family small and short enough for smoke tests (a second or two each, cached
#: in the suite's cache): it barely learns, so the family tests reward parity (``parity_reward``)
SMOKE_WARM_START: dict[str, Any] = {
    "task": "arithmetic",
    "task_size": 2000,
    "steps": 30,
    "hidden_size": 64,
    "num_layers": 1,
    "eval_size": 8,
    "eval_samples": 2,
    "progress": False,
    "save_minutes": 0.0,
}


def parity_reward(prompts: list[str], completions: list[str], **kw: Any) -> list[float]:
    """1 for a completion of odd length: half the rollouts of any policy succeed, so the family
    smoke tests have mixed groups (gradient signal) whatever their model knows."""
    return [float(len(c) % 2) for c in completions]


def parity_task() -> Any:
    """``arithmetic`` (the trainer's default split) scored by ``parity_reward``."""
    from trainers.tasks import make_task

    return make_task("arithmetic", seed=0, num_train=2000, reward_funcs=parity_reward)


@pytest.fixture(scope="session")
def family_model_dir() -> Callable[[str], Any]:
    """``arch -> directory`` of a small warm start of that family (``adaroll warm-start``'s
    cache in the suite's cache: built once per checkout, reused by later sessions)."""
    from trainers.models.warm_start_task import WarmStartConfig, ensure_warm_start

    def build(arch: str) -> Any:
        return ensure_warm_start(WarmStartConfig(arch=arch, **SMOKE_WARM_START), announce=False)

    return build


class ModelCase:
    """A model a parametrised trainer test runs on: ``name`` (``tiny`` or a family), its
    directory and the task to train on (None: the test's own, for ``tiny``; the parity task for
    the families, whose smoke warm starts solve almost nothing)."""

    def __init__(self, name: str, directory: Any, task: Any) -> None:
        self.name, self.directory, self.task = name, directory, task

    def task_kwargs(self) -> dict[str, Any]:
        """``{"task": ...}`` for a family, ``{}`` for ``tiny``."""
        return {} if self.task is None else {"task": self.task}


@pytest.fixture
def model_case(request: pytest.FixtureRequest) -> ModelCase:
    """Parametrise indirectly with ``"tiny"`` or a family (``ARCHITECTURES`` of
    ``trainers.models.architectures``): ``@pytest.mark.parametrize("model_case", ["tiny",
    *ARCHITECTURES], indirect=True)``."""
    name = request.param
    if name == "tiny":
        return ModelCase(name, request.getfixturevalue("tiny_model_dir"), None)
    build = request.getfixturevalue("family_model_dir")
    return ModelCase(name, build(name), parity_task())
