"""Dropout off, written once: GRPO's importance ratio compares two forward passes of the same
weights, and with dropout on it is noise.

``disable_dropout(model)`` zeroes every ``nn.Dropout`` and every rate named in
``DROPOUT_ATTRIBUTES`` held by the model's config or by any submodule; ``has_dropout(model)``
says whether anything would still drop activations in train mode. Only torch is imported.
"""

from __future__ import annotations

from typing import Any

import torch

#: dropout rates that Hugging Face configs and modules hold as numbers, under every name in use
#: (Llama/Qwen, GPT-2, BERT-style, OPT/BART-style)
DROPOUT_ATTRIBUTES = (
    "attention_dropout",
    "hidden_dropout",
    "dropout",
    "activation_dropout",
    "resid_pdrop",
    "embd_pdrop",
    "attn_pdrop",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "classifier_dropout",
    "summary_first_dropout",
)


def _rate(obj: Any, name: str) -> float:
    """The dropout rate ``obj`` holds under ``name``, 0 when it holds no number there."""
    value = getattr(obj, name, None)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def zero_dropout_fields(obj: Any) -> None:
    """Zero every rate named in ``DROPOUT_ATTRIBUTES`` that ``obj`` holds as a number."""
    for name in DROPOUT_ATTRIBUTES:
        if _rate(obj, name) != 0:
            setattr(obj, name, 0.0)


def disable_dropout(model: Any) -> None:
    """Switch dropout off everywhere in ``model``: with it on, GRPO's importance ratio is noise.

    Sets ``p = 0`` on every ``nn.Dropout``, and 0 on every rate named in ``DROPOUT_ATTRIBUTES``
    held by the model's config or by any submodule (Llama-style attention reads its rate from
    the config once, at construction, and keeps it as a float). Idempotent; works in train mode.
    """
    config = getattr(model, "config", None)
    if config is not None:
        zero_dropout_fields(config)
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        zero_dropout_fields(module)


def has_dropout(model: Any) -> bool:
    """Whether any module of ``model`` would drop activations in train mode: an ``nn.Dropout``
    with ``p > 0`` or a positive rate named in ``DROPOUT_ATTRIBUTES`` (what ``disable_dropout``
    zeroes)."""
    return any(
        (isinstance(module, torch.nn.Dropout) and module.p > 0)
        or any(_rate(module, name) > 0 for name in DROPOUT_ATTRIBUTES)
        for module in model.modules()
    )
