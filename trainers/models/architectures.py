"""Small causal LMs of four families, random-initialised from local configs, one builder for all.

``build_model(arch, size, seed, tokenizer=...)`` builds ``arch`` in ``ARCHITECTURES``:

- ``llama``: the ``tiny`` model's family (``trainers.models.tiny``: RMSNorm, SwiGLU MLP, rotary
  positions); its config is ``TinyConfig.to_llama_config``, so ``build_tiny_model`` is this case;
- ``qwen3``: Llama plus RMS-normed queries and keys (``Qwen3ForCausalLM``);
- ``gpt_neox``: LayerNorm, GELU MLP, parallel residual, rotary on a quarter of each head
  (Pythia's recipe, ``GPTNeoXForCausalLM``);
- ``gpt2``: LayerNorm, GELU MLP, learned absolute positions (``GPT2LMHeadModel``): the one family
  whose output depends on where a sequence starts, so left-padded batches need ``position_ids``
  counted over real tokens (``trainers.models.collate.position_ids``; ``generate`` makes them
  from the attention mask).

Every family gets the same shape (``ModelSize``: width, layers, MLP width, context), heads of
size 64 (vLLM's CPU attention kernels need a supported head size; 64 is one), all dropout rates
0 (GRPO's importance ratio compares two forward passes), float32, the character tokenizer of
``trainers.models.tiny`` unless another is given, and tied input and output embeddings except for
``gpt_neox``, whose separate output matrix (``embed_out``) is kept as Pythia has it (the trainer's
checkpoint restore recognises only a tied ``lm_head``). Deterministic given ``seed``; the caller's
random state is left alone. Nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

from adaroll_env.errors import check_int
from trainers.models.tiny import TinyConfig, build_tiny_tokenizer, seeded_model

__all__ = [
    "ARCHITECTURES",
    "HEAD_DIM",
    "ModelSize",
    "build_model",
    "check_arch",
    "model_config",
    "parameter_count",
]

#: the families ``build_model`` builds
ARCHITECTURES = ("llama", "qwen3", "gpt_neox", "gpt2")
#: the head size of every family (vLLM's CPU kernels support it)
HEAD_DIM = 64
#: families whose MLP is gated (three matrices of width ``intermediate_size``), not two
GATED = ("llama", "qwen3")


def check_arch(arch: str) -> str:
    """``arch`` when it is one of ``ARCHITECTURES``, else a ValueError naming them."""
    if arch not in ARCHITECTURES:
        from adaroll_env.errors import unknown_name

        raise unknown_name("architecture", str(arch), ARCHITECTURES, "Pass one of them as arch.")
    return arch


@dataclass(frozen=True)
class ModelSize:
    """The shape of a model, the same knobs for every family.

    ``hidden_size`` is a multiple of 64 (``hidden_size // 64`` heads of size 64);
    ``intermediate_size`` 0 takes the family's MLP width: ``4 * hidden_size`` for the GELU
    families, about ``8/3 * hidden_size`` (a multiple of 32) for the gated ones, so that the MLPs
    hold about as many parameters; ``context`` is ``max_position_embeddings`` (the tokenizer's
    ``model_max_length`` follows it). The default (width 256, four layers, context 256) holds
    about 3.2 M parameters in every family with the character tokenizer.
    """

    hidden_size: int = 256
    num_layers: int = 4
    intermediate_size: int = 0
    context: int = 256
    rope_theta: float = 10000.0

    def __post_init__(self) -> None:
        check_int("hidden_size", self.hidden_size, HEAD_DIM)
        check_int("num_layers", self.num_layers, 1)
        check_int("intermediate_size", self.intermediate_size, 0)
        check_int("context", self.context, 1)
        if self.hidden_size % HEAD_DIM:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) is not a multiple of the head size {HEAD_DIM}: "
                "use 64, 128, 192, 256, ..."
            )
        if not self.rope_theta > 0:
            raise ValueError(f"rope_theta ({self.rope_theta}) must be positive, e.g. 10000")

    @property
    def heads(self) -> int:
        """Attention heads (of size 64)."""
        return self.hidden_size // HEAD_DIM

    def mlp_width(self, arch: str) -> int:
        """The MLP width of ``arch`` at this size (``intermediate_size`` when set)."""
        if self.intermediate_size:
            return self.intermediate_size
        if check_arch(arch) in GATED:
            return max(32, round(8 * self.hidden_size / 3 / 32) * 32)
        return 4 * self.hidden_size

    def tiny_config(self) -> TinyConfig:
        """The llama case as the ``tiny`` model's config (what ``build_tiny_model`` takes)."""
        return TinyConfig(
            hidden_size=self.hidden_size,
            num_hidden_layers=self.num_layers,
            num_attention_heads=self.heads,
            num_key_value_heads=self.heads,
            head_dim=HEAD_DIM,
            intermediate_size=self.mlp_width("llama"),
            max_position_embeddings=self.context,
            rope_theta=self.rope_theta,
        )


def _token_ids(tokenizer: PreTrainedTokenizerBase) -> dict[str, Any]:
    return {
        "vocab_size": len(tokenizer),
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }


def model_config(
    arch: str, size: ModelSize, tokenizer: PreTrainedTokenizerBase
) -> PretrainedConfig:
    """The transformers config of ``arch`` at ``size`` for ``tokenizer``'s vocabulary (all
    dropout 0, float32)."""
    check_arch(arch)
    if arch == "llama":
        return size.tiny_config().to_llama_config(tokenizer)
    rope = {"rope_type": "default", "rope_theta": size.rope_theta}
    if arch == "qwen3":
        from transformers import Qwen3Config

        return Qwen3Config(
            hidden_size=size.hidden_size,
            intermediate_size=size.mlp_width(arch),
            num_hidden_layers=size.num_layers,
            num_attention_heads=size.heads,
            num_key_value_heads=size.heads,
            head_dim=HEAD_DIM,
            max_position_embeddings=size.context,
            rope_parameters=rope,
            tie_word_embeddings=True,
            attention_dropout=0.0,
            dtype="float32",
            **_token_ids(tokenizer),
        )
    if arch == "gpt_neox":
        from transformers import GPTNeoXConfig

        return GPTNeoXConfig(
            hidden_size=size.hidden_size,
            intermediate_size=size.mlp_width(arch),
            num_hidden_layers=size.num_layers,
            num_attention_heads=size.heads,
            max_position_embeddings=size.context,
            rope_parameters={**rope, "partial_rotary_factor": 0.25},
            tie_word_embeddings=False,
            attention_dropout=0.0,
            hidden_dropout=0.0,
            classifier_dropout=0.0,
            dtype="float32",
            **_token_ids(tokenizer),
        )
    from transformers import GPT2Config

    return GPT2Config(
        n_embd=size.hidden_size,
        n_inner=size.mlp_width(arch),
        n_layer=size.num_layers,
        n_head=size.heads,
        n_positions=size.context,
        tie_word_embeddings=True,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        summary_first_dropout=0.0,
        dtype="float32",
        **_token_ids(tokenizer),
    )


def _model_class(arch: str) -> type[PreTrainedModel]:
    import transformers

    name = {
        "llama": "LlamaForCausalLM",
        "qwen3": "Qwen3ForCausalLM",
        "gpt_neox": "GPTNeoXForCausalLM",
        "gpt2": "GPT2LMHeadModel",
    }[check_arch(arch)]
    cls: type[PreTrainedModel] = getattr(transformers, name)
    return cls


def build_model(
    arch: str,
    size: ModelSize | None = None,
    seed: int = 0,
    *,
    tokenizer: PreTrainedTokenizerBase | None = None,
) -> PreTrainedModel:
    """A freshly initialised ``arch`` model of ``size`` (default ``ModelSize()``), float32,
    deterministic given ``seed``; ``tokenizer`` defaults to the character tokenizer with
    ``model_max_length`` = the context.

    >>> m = build_model("gpt2", ModelSize(hidden_size=64, num_layers=1, context=32))
    >>> type(m).__name__, m.config.n_positions, m.config.n_head
    ('GPT2LMHeadModel', 32, 1)
    >>> build_model("bert")
    Traceback (most recent call last):
    ...
    ValueError: unknown architecture 'bert'. Known: gpt2, gpt_neox, llama, qwen3. Pass one of them as arch.
    """  # noqa: E501
    check_arch(arch)
    size = size or ModelSize()
    if tokenizer is None:
        tokenizer = build_tiny_tokenizer(model_max_length=size.context)
    config = model_config(arch, size, tokenizer)
    return seeded_model(_model_class(arch), config, seed, pad_token_id=tokenizer.pad_token_id)


def parameter_count(model: torch.nn.Module) -> int:
    """Distinct parameters of ``model`` (tied matrices counted once)."""
    return sum(p.numel() for p in model.parameters())
