"""Policies for the trainer: ``load_policy`` for ``tiny`` or any local Hugging Face causal LM.

- ``resolve_model_dir("tiny" | DIR)``: the local directory a model name stands for (the cached
  warm-started tiny model, built on first use, or a saved model directory).
- ``state_dict_as_saved(model)``: the weights under the names saved on disk (for vLLM's sync).
- ``weights_sha256(DIR)``: a short digest of a model directory's weight files, to tell warm
  starts apart in results.
- ``load_policy("tiny" | DIR)``: model and tokenizer ready for the trainer (dropout off, left
  padding, a pad token).
- ``disable_dropout(model)`` / ``has_dropout(model)`` (from ``trainers.models.dropout``): dropout
  off in the config and every module, and the check for it, in one place.

The tiny model's tokenizer and architecture live in ``trainers.models.tiny`` and its warm start and
cache in ``trainers.models.warm_start``; their names are re-exported here, where they were
documented. Arrows: ``models -> pretrain -> tiny``; ``pretrain`` and ``tiny`` never import
``models``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from trainers.models.collate import count_positions_over_tokens
from trainers.models.dropout import (
    DROPOUT_ATTRIBUTES,
    disable_dropout,
    has_dropout,
    zero_dropout_fields,
)
from trainers.models.paths import MissingPathError
from trainers.models.tiny import (
    TINY_CHARACTERS,
    TINY_METADATA_FILE,
    TINY_RECIPE_VERSION,
    TINY_SPECIAL_TOKENS,
    TinyConfig,
    build_tiny_model,
    build_tiny_tokenizer,
)
from trainers.models.warm_start import ensure_tiny_model, tiny_model_dir

__all__ = [
    "DROPOUT_ATTRIBUTES",
    "TINY_CHARACTERS",
    "TINY_METADATA_FILE",
    "TINY_RECIPE_VERSION",
    "TINY_SPECIAL_TOKENS",
    "MissingPathError",
    "TinyConfig",
    "build_tiny_model",
    "build_tiny_tokenizer",
    "disable_dropout",
    "ensure_tiny_model",
    "has_dropout",
    "load_policy",
    "resolve_model_dir",
    "state_dict_as_saved",
    "tiny_model_dir",
    "weights_sha256",
]

#: the weight files ``weights_sha256`` reads
WEIGHT_PATTERNS = ("*.safetensors", "*.bin")


def resolve_model_dir(path_or_name: str) -> Path:
    """The local directory ``path_or_name`` names: the cached tiny model (built if missing) for
    ``"tiny"``, else the directory itself, checked to exist and hold a ``config.json``.
    """
    if path_or_name == "tiny":
        return ensure_tiny_model()
    directory = Path(path_or_name).expanduser()
    fix = (
        "run `adaroll pretrain-tiny --out DIR` or `adaroll warm-start --out DIR`, or pass a "
        "local model directory"
    )
    if not directory.exists():
        raise MissingPathError(
            f"model {path_or_name!r} is neither 'tiny' nor an existing local directory "
            f"(nothing is downloaded): {fix}"
        )
    if not (directory / "config.json").is_file():
        raise ValueError(
            f"model directory {path_or_name!r} has no config.json, so it is not a saved "
            f"Hugging Face model: {fix}"
        )
    return directory


def weights_sha256(directory: str | Path, length: int = 12) -> str | None:
    """The first ``length`` hex digits of the sha256 of the directory's weight files
    (``WEIGHT_PATTERNS``, their contents in sorted name order); None when it has none."""
    import hashlib

    files = sorted({p for pattern in WEIGHT_PATTERNS for p in Path(directory).glob(pattern)})
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()[:length]


def state_dict_as_saved(model: Any) -> dict[str, torch.Tensor]:
    """``model.state_dict()`` under the names ``save_pretrained`` writes to disk, which is what
    loaders of saved checkpoints expect (vLLM's ``reload_weights``): transformers renames some
    families' weights when saving (GPT-NeoX's ``lm_head`` is ``embed_out`` on disk). Tied copies
    (``lm_head.weight``) stay; other families come back unchanged."""
    state = dict(model.state_dict())
    try:
        from transformers.core_model_loading import revert_weight_conversion
    except ImportError:  # a transformers without weight renaming: the names are the saved ones
        return state
    return dict(revert_weight_conversion(model, state))


def load_policy(
    path_or_name: str,
    *,
    dtype: torch.dtype | str | None = None,
    device: torch.device | str | None = None,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A causal LM and its tokenizer, ready for generation and GRPO updates.

    Args:
        path_or_name: ``"tiny"`` (the cached warm-started tiny model, built on first use) or a
            local Hugging Face model directory; nothing is downloaded.
        dtype: the parameters' dtype (default: as saved).
        device: where to put the model (default: CPU).

    Dropout is switched off in the config and in every ``nn.Dropout``; the tokenizer pads on the
    left and has a pad token (its eos token when it had none). A model with learned absolute
    positions (GPT-2) counts them over real tokens in every forward pass that gives none
    (``trainers.models.collate.count_positions_over_tokens``), so left padding changes nothing.
    """
    directory = resolve_model_dir(path_or_name)
    config = AutoConfig.from_pretrained(directory, local_files_only=True)
    zero_dropout_fields(config)  # before construction: modules copy their rates from it
    config.use_cache = True  # generation uses the KV cache; training passes use_cache=False
    model = AutoModelForCausalLM.from_pretrained(
        directory,
        config=config,
        local_files_only=True,
        dtype=dtype if dtype is not None else "auto",
    )
    disable_dropout(model)
    count_positions_over_tokens(model)  # GPT-2: left padding never shifts its positions
    if device is not None:
        cast(Any, model).to(device)
    tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer
