"""Policies for the trainer: the ``tiny`` model, its character tokenizer, and ``load_policy``.

- ``build_tiny_tokenizer()``: one token per character (printable ASCII and newline) plus
  ``<pad> <s> </s> <unk>``, saved as a standard ``tokenizer.json`` that ``AutoTokenizer`` and vLLM
  load; encoding prepends ``<s>`` and adds no ``</s>``.
- ``TinyConfig`` / ``build_tiny_model(cfg, seed)``: a small Llama-style causal LM (head size 64,
  tied embeddings, no dropout), built from a local config; nothing is downloaded.
- ``tiny_model_dir(cfg)`` / ``ensure_tiny_model(cfg)``: where the warm-started tiny model is
  cached (``$ADAROLL_CACHE_DIR/models/tiny-<digest>``) and building it there once, atomically,
  under a file lock so concurrent test workers never build it twice.
- ``resolve_model_dir("tiny" | DIR)``: the local directory a model name stands for.
- ``load_policy("tiny" | DIR)``: model and tokenizer ready for the trainer (dropout off, left
  padding, a pad token).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
)

from agents.bamdp.cache import cache_dir

if TYPE_CHECKING:
    from trainers.pretrain import PretrainConfig

#: special tokens of the tiny tokenizer, in id order (``<pad>`` is 0, ``<s>`` 1, ``</s>`` 2)
TINY_SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>")
#: the characters the tiny tokenizer knows: printable ASCII (32..126) and newline
TINY_CHARACTERS = (*(chr(c) for c in range(32, 127)), "\n")
#: bumped whenever the tiny model's recipe (tokenizer, architecture, training code) changes, so
#: cached builds of an older recipe are not reused
TINY_RECIPE_VERSION = 2
#: the file written last into a tiny model directory; its presence marks a complete build
TINY_METADATA_FILE = "adaroll_tiny.json"

_DROPOUT_ATTRIBUTES = (
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


def build_tiny_tokenizer() -> PreTrainedTokenizerFast:
    """A character-level fast tokenizer: one id per character, ``<s>`` prepended, no ``</s>``.

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
        model_max_length=TinyConfig.max_position_embeddings,
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
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"{name} ({value}) must be a positive integer")
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
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = LlamaForCausalLM(config)
    finally:
        torch.random.set_rng_state(state)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model.float()


def _config_digest(cfg: PretrainConfig) -> str:
    fields = dataclasses.asdict(cfg)
    fields.pop("out", None)
    fields.pop("progress", None)
    fields["recipe_version"] = TINY_RECIPE_VERSION
    text = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def tiny_model_dir(cfg: PretrainConfig | None = None) -> Path:
    """Where the warm-started tiny model of ``cfg`` (default: ``PretrainConfig()``) is cached.

    ``$ADAROLL_CACHE_DIR/models/tiny-<digest>`` (default root ``~/.cache/adaroll``); the digest
    hashes the pretraining config (all fields but ``out`` and ``progress``) and the recipe version.
    """
    if cfg is None:
        from trainers.pretrain import PretrainConfig

        cfg = PretrainConfig()
    return cache_dir() / "models" / f"tiny-{_config_digest(cfg)}"


def _is_complete(directory: Path) -> bool:
    return (directory / TINY_METADATA_FILE).is_file()


def ensure_tiny_model(cfg: PretrainConfig | None = None, *, announce: bool = True) -> Path:
    """The cached tiny model directory of ``cfg``, built (once, atomically) if missing.

    Concurrent callers (pytest-xdist workers, several trainers) wait on a file lock; the first
    trains into a temporary directory beside the target and renames it into place, the others
    find it complete.
    """
    import fcntl

    from trainers.pretrain import PretrainConfig, train_and_save

    cfg = cfg if cfg is not None else PretrainConfig()
    target = tiny_model_dir(cfg)
    if _is_complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if _is_complete(target):
                return target
            if announce:
                print(f"adaroll: building the warm-started tiny model (once) into {target}")
            tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.tmp-"))
            tmp.chmod(0o755)  # mkdtemp makes it private; the cache is shared like any other
            try:
                train_and_save(cfg, tmp)
                if target.exists():  # an incomplete leftover (never a finished build)
                    shutil.rmtree(target)
                os.replace(tmp, target)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return target


def resolve_model_dir(path_or_name: str) -> Path:
    """The local directory ``path_or_name`` names: the cached tiny model (built if missing) for
    ``"tiny"``, else the directory itself, checked to exist and hold a ``config.json``.
    """
    if path_or_name == "tiny":
        return ensure_tiny_model()
    directory = Path(path_or_name).expanduser()
    fix = "run `adaroll pretrain-tiny --out DIR` or pass a local model directory"
    if not directory.exists():
        raise FileNotFoundError(
            f"model {path_or_name!r} is neither 'tiny' nor an existing local directory "
            f"(nothing is downloaded): {fix}"
        )
    if not (directory / "config.json").is_file():
        raise ValueError(
            f"model directory {path_or_name!r} has no config.json, so it is not a saved "
            f"Hugging Face model: {fix}"
        )
    return directory


def _zero_dropout(config: Any) -> None:
    for name in _DROPOUT_ATTRIBUTES:
        value = getattr(config, name, None)
        if isinstance(value, float) and not isinstance(value, bool):
            setattr(config, name, 0.0)


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
    left and has a pad token (its eos token when it had none).
    """
    directory = resolve_model_dir(path_or_name)
    config = AutoConfig.from_pretrained(directory, local_files_only=True)
    _zero_dropout(config)
    config.use_cache = True  # generation uses the KV cache; training passes use_cache=False
    model = AutoModelForCausalLM.from_pretrained(
        directory,
        config=config,
        local_files_only=True,
        dtype=dtype if dtype is not None else "auto",
    )
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    if device is not None:
        cast(Any, model).to(device)
    tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer
