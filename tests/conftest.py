"""Shared fixtures of the whole suite, and a cache of its own.

Tests never write into the user's cache (``~/.cache/adaroll``): at import, before any test
module loads, ``ADAROLL_CACHE_DIR`` points at ``<repo>/.test-cache`` (ignored by git; or at
``$ADAROLL_TEST_CACHE_DIR`` when set). The directory persists across sessions, so the tiny
model's warm start (about 70 s) and the bamdp tables are built once per checkout, not per run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: the suite's cache directory
TEST_CACHE = Path(
    os.environ.get("ADAROLL_TEST_CACHE_DIR") or Path(__file__).resolve().parents[1] / ".test-cache"
)
os.environ["ADAROLL_CACHE_DIR"] = str(TEST_CACHE)


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    """The warm-started tiny model directory (default ``PretrainConfig``).

    Built on first use into the suite's cache (``$ADAROLL_CACHE_DIR/models/tiny-<digest>``), so
    later sessions reuse it; a file lock makes concurrent xdist workers build it once.
    """
    from trainers.models.loading import ensure_tiny_model

    path = Path(ensure_tiny_model())
    assert TEST_CACHE in path.parents, f"the tiny model was built outside the test cache: {path}"
    return path


@pytest.fixture
def tiny_policy(tiny_model_dir: Path):
    """A fresh ``(model, tokenizer)`` of the tiny model for one test (safe to train in place)."""
    from trainers.models.loading import load_policy

    return load_policy(str(tiny_model_dir))


#: a ChatML chat template (Qwen's format) for the locally built chat model
CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@pytest.fixture(scope="session")
def chat_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved random-init Qwen2-architecture model with a byte-level BPE tokenizer trained here
    on a few strings and given a ChatML chat template: a real architecture, nothing downloaded."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from tokenizers import trainers as tk_trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    corpus = [
        "What is 37 + 5? The answer is 42.",
        "You are a helpful assistant. Answer with a number.",
        "system user assistant 0123456789 + - * / = ?",
    ] * 4
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = tk_trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tk.train_from_iterator(corpus, trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tok.chat_template = CHATML
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=256,
        tie_word_embeddings=True,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=None,
    )
    out = tmp_path_factory.mktemp("qwen2-chat")
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).save_pretrained(out)
    tok.save_pretrained(out)
    return out
