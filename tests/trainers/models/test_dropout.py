"""trainers.models.dropout: dropout off everywhere, and the check for it."""

from __future__ import annotations

from types import SimpleNamespace

import torch
from transformers import LlamaForCausalLM

from trainers import models as models_mod
from trainers.models.dropout import (
    DROPOUT_ATTRIBUTES,
    disable_dropout,
    has_dropout,
    zero_dropout_fields,
)


def test_disable_dropout_silences_modules_config_and_copied_rates(one_layer_llama):
    config = one_layer_llama(vocab_size=50, attention_dropout=0.5)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.model.extra = torch.nn.Dropout(0.3)  # an nn.Dropout anywhere in the tree
    model.train()
    ids = torch.tensor([[1, 5, 7, 9, 11, 13]])
    a, b = model(input_ids=ids).logits, model(input_ids=ids).logits
    assert not torch.equal(a, b)  # dropout on: two passes differ
    models_mod.disable_dropout(model)
    assert model.config.attention_dropout == 0.0
    # Llama attention copies its rate at construction; the config alone would leave it on.
    assert all(getattr(m, "attention_dropout", 0.0) == 0.0 for m in model.modules()), (
        "a module kept its dropout rate"
    )
    assert model.model.extra.p == 0.0
    a, b = model(input_ids=ids).logits, model(input_ids=ids).logits
    assert model.training and torch.equal(a, b)  # still in train mode, now deterministic


# --- added with the mirrored layout ----------------------------------------------------------


def test_zero_dropout_fields_touches_only_positive_numeric_rates():
    obj = SimpleNamespace(
        attention_dropout=0.1,
        resid_pdrop=1,  # an int rate counts
        hidden_dropout=0.0,
        dropout=True,  # a bool is no rate: left alone
        classifier_dropout=None,
        attn_pdrop="0.5",  # a string is no rate
        other_rate=0.7,  # not a dropout name
    )
    zero_dropout_fields(obj)
    assert vars(obj) == {
        "attention_dropout": 0.0,
        "resid_pdrop": 0.0,
        "hidden_dropout": 0.0,
        "dropout": True,
        "classifier_dropout": None,
        "attn_pdrop": "0.5",
        "other_rate": 0.7,
    }
    assert len(DROPOUT_ATTRIBUTES) == len(set(DROPOUT_ATTRIBUTES)) == 11


class _WithRate(torch.nn.Module):
    def __init__(self, rate: float) -> None:
        super().__init__()
        self.embd_pdrop = rate
        self.linear = torch.nn.Linear(2, 2)


def test_has_dropout_sees_modules_and_rates_and_disable_clears_both():
    assert not has_dropout(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.0)))
    assert has_dropout(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.1)))
    nested = torch.nn.Sequential(torch.nn.Sequential(_WithRate(0.2)))
    assert has_dropout(nested)
    disable_dropout(nested)  # no config attribute: only the modules
    assert not has_dropout(nested) and nested[0][0].embd_pdrop == 0.0
    model = torch.nn.Sequential(torch.nn.Dropout(0.4))
    model.config = SimpleNamespace(hidden_dropout_prob=0.3)  # type: ignore[assignment]
    disable_dropout(model)
    disable_dropout(model)  # idempotent
    assert model[0].p == 0.0 and model.config.hidden_dropout_prob == 0.0
