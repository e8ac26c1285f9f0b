"""The ``tiny`` model: a character tokenizer and a small Llama-style architecture.

- ``build_tiny_tokenizer()``: one token per character (printable ASCII and newline) plus
  ``<pad> <s> </s> <unk>``, saved as a standard ``tokenizer.json`` that ``AutoTokenizer`` and vLLM
  load; encoding prepends ``<s>`` and adds no ``</s>``.
- ``TinyConfig`` / ``build_tiny_model(cfg, seed)``: a small Llama-style causal LM (head size 64,
  tied embeddings, no dropout), built from a local config; nothing is downloaded.

Its warm start and cache are ``trainers.models.warm_start``; loading any policy is
``trainers.models.loading``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
)

from adaroll_env.errors import check_int

#: special tokens of the tiny tokenizer, in id order (``<pad>`` is 0, ``<s>`` 1, ``</s>`` 2)
TINY_SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>")
#: the characters the tiny tokenizer knows: printable ASCII (32..126) and newline
TINY_CHARACTERS = (*(chr(c) for c in range(32, 127)), "\n")
#: bumped whenever the tiny model's recipe (tokenizer, architecture, training code) changes, so
#: cached builds of an older recipe are not reused
TINY_RECIPE_VERSION = 2
#: the file written last into a tiny model directory; its presence marks a complete build
TINY_METADATA_FILE = "adaroll_tiny.json"

M = TypeVar("M", bound=PreTrainedModel)


def build_tiny_tokenizer(model_max_length: int | None = None) -> PreTrainedTokenizerFast:
    """A character-level fast tokenizer: one id per character, ``<s>`` prepended, no ``</s>``.

    ``model_max_length`` is the context of the model it serves (default: the tiny model's, 64).

    >>> tok = build_tiny_tokenizer()
    >>> tok.convert_ids_to_tokens(tok("37+5=").input_ids)
    ['<s>', '3', '7', '+', '5', '=']
    >>> tok.decode(tok("37+5=42").input_ids, skip_special_tokens=True)
    '37+5=42'
    """
    vocab = {t: i for i, t in enumerate(TINY_SPECIAL_TOKENS + TINY_CHARACTERS)}
    pad, bos, eos, unk = TINY_SPECIAL_TOKENS
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk))
    # Every character is its own pre-token, spaces and newlines included.
    tk.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tk.decoder = decoders.Fuse()
    tk.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A $B:1", special_tokens=[(bos, vocab[bos])]
    )
    tk.add_special_tokens(list(TINY_SPECIAL_TOKENS))
    return PreTrainedTokenizerFast(
        tokenizer_object=tk,
        bos_token=bos,
        eos_token=eos,
        pad_token=pad,
        unk_token=unk,
        padding_side="left",
        clean_up_tokenization_spaces=False,
        model_max_length=model_max_length or TinyConfig.max_position_embeddings,
    )


@dataclass(frozen=True)
class TinyConfig:
    """Architecture of the tiny Llama-style model (head size 64: vLLM's CPU kernels need it)."""

    hidden_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    num_key_value_heads: int = 2
    head_dim: int = 64
    intermediate_size: int = 256
    max_position_embeddings: int = 64
    rope_theta: float = 10000.0

    def __post_init__(self) -> None:
        for name in (
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "intermediate_size",
            "max_position_embeddings",
        ):
            check_int(name, getattr(self, name), 1)
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_attention_heads}) is not a multiple of "
                f"num_key_value_heads ({self.num_key_value_heads}): choose a divisor"
            )

    def to_llama_config(self, tokenizer: PreTrainedTokenizerBase) -> LlamaConfig:
        """The ``LlamaConfig`` of this architecture for ``tokenizer``'s vocabulary."""
        return LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=self.hidden_size,
            intermediate_size=self.intermediate_size,
            num_hidden_layers=self.num_hidden_layers,
            num_attention_heads=self.num_attention_heads,
            num_key_value_heads=self.num_key_value_heads,
            head_dim=self.head_dim,
            max_position_embeddings=self.max_position_embeddings,
            rope_parameters={"rope_type": "default", "rope_theta": self.rope_theta},
            tie_word_embeddings=True,
            attention_dropout=0.0,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            dtype="float32",
        )


def build_tiny_model(
    cfg: TinyConfig | None = None,
    seed: int = 0,
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
) -> LlamaForCausalLM:
    """A freshly initialised tiny model (float32), deterministic given ``seed``."""
    cfg = cfg or TinyConfig()
    tokenizer = tokenizer if tokenizer is not None else build_tiny_tokenizer()
    config = cfg.to_llama_config(tokenizer)
    model = seeded_model(LlamaForCausalLM, config, seed, pad_token_id=tokenizer.pad_token_id)
    return model


def seeded_model(cls: type[M], config: Any, seed: int, *, pad_token_id: int | None) -> M:
    """``cls(config)`` initialised from ``seed`` (the caller's random state is left alone), in
    float32, generating with ``pad_token_id``: every architecture is built this way
    (``trainers.models.architectures.build_model``)."""
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = cls(config)
    finally:
        torch.random.set_rng_state(state)
    model.generation_config.pad_token_id = pad_token_id
    return model.float()
