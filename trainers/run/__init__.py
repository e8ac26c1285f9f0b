"""A training run around the trainer: ``adaroll grpo``'s loop and what a run directory holds.

Rooms (``trainers.run.``):

- ``grpo_command``: ``adaroll grpo`` (the loop over steps, evaluation, metrics, resume);
- ``callbacks``: what runs between steps (metrics log, TensorBoard, progress);
- ``checkpoints``: atomic checkpoints of weights and trainer state, and resuming from them;
- ``stopping``: SIGINT/SIGTERM end a run after the step in progress;
- ``run_files``: the reader of run directories (what ``adaroll bench --from-run`` and the
  competition tables read), next to the writer.

Before version 4 ``trainers.run`` was the ``adaroll grpo`` module itself; its names still
resolve here, with a ``DeprecationWarning``, for one release.
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings
from typing import Any


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:  # a room of this package
        return importlib.import_module(f"{__name__}.{name}")
    command = importlib.import_module(f"{__name__}.grpo_command")
    if not hasattr(command, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"trainers.run.{name} moved to trainers.run.grpo_command.{name}: import it from there",
        DeprecationWarning,
        stacklevel=2,
    )
    value = getattr(command, name)
    globals()[name] = value  # warned once
    return value
