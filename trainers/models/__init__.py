"""Policies and their warm starts: loading, the tiny model, prompts, dropout, cache paths.

Rooms (``trainers.models.``):

- ``loading``: ``load_policy("tiny" | DIR)``, ``resolve_model_dir``, ``weights_sha256``
  (re-exported here, their documented path);
- ``tiny``: the character-level tokenizer and the Llama-style tiny architecture;
- ``warm_start``: the tiny model's supervised warm start and its cache (``adaroll
  pretrain-tiny``); ``warm_start_report``: its held-out report per level;
- ``prompts``: a prompt's token ids (chat template or plain);
- ``collate``: token rows padded and batched for a forward pass (the engines and the update);
- ``dropout``: dropout off, in one place;
- ``paths``: the cache root and the error for a missing path.

Importing this package loads nothing heavy: the names below are resolved on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

#: each public name and the room it lives in
_HOMES = {
    **dict.fromkeys(["load_policy", "resolve_model_dir", "weights_sha256"], "loading"),
    **dict.fromkeys(
        [
            "TINY_CHARACTERS",
            "TINY_METADATA_FILE",
            "TINY_RECIPE_VERSION",
            "TINY_SPECIAL_TOKENS",
            "TinyConfig",
            "build_tiny_model",
            "build_tiny_tokenizer",
        ],
        "tiny",
    ),
    **dict.fromkeys(["ensure_tiny_model", "tiny_model_dir"], "warm_start"),
    **dict.fromkeys(["DROPOUT_ATTRIBUTES", "disable_dropout", "has_dropout"], "dropout"),
    "MissingPathError": "paths",
    "cache_dir": "paths",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
