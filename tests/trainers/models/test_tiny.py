"""trainers.models.tiny: the character tokenizer and the tiny Llama-style architecture."""

from __future__ import annotations

import json
import string

import pytest
import torch
from transformers import AutoTokenizer

from trainers.models.tiny import (
    TINY_CHARACTERS,
    TINY_SPECIAL_TOKENS,
    TinyConfig,
    build_tiny_model,
    build_tiny_tokenizer,
)

ARITHMETIC = ["37+5=42", "0+0=0", "123+877=1000", "91-9=82", "12*34=408", "7*8="]
TEXT = [
    "Hello, world!",
    "two  spaces, a trailing space ",
    "line one\nline two\n",
    string.printable.replace("\t", "").replace("\r", "").replace("\x0b", "").replace("\x0c", ""),
    "",
]


# -- tokenizer ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ARITHMETIC + TEXT)
def test_tokenizer_round_trip_one_token_per_character(text):
    tok = build_tiny_tokenizer()
    ids = tok(text).input_ids
    assert ids[0] == tok.bos_token_id
    assert tok.eos_token_id not in ids
    assert len(ids) == len(text) + 1
    assert tok.unk_token_id not in ids
    assert tok.decode(ids, skip_special_tokens=True) == text
    # Concatenation is consistent: a completion's ids are the tail of the full sequence's ids.
    if "=" in text:
        prompt, answer = text.split("=")[0] + "=", text.split("=")[1]
        assert (
            tok(prompt + answer).input_ids
            == tok(prompt).input_ids + tok(answer, add_special_tokens=False).input_ids
        )


def test_tokenizer_special_tokens_and_left_padding():
    tok = build_tiny_tokenizer()
    assert (tok.pad_token, tok.bos_token, tok.eos_token, tok.unk_token) == (
        "<pad>",
        "<s>",
        "</s>",
        "<unk>",
    )
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id, tok.unk_token_id) == (0, 1, 2, 3)
    assert len(tok) == 4 + 95 + 1  # specials, printable ASCII, newline
    assert tok("é").input_ids == [1, tok.unk_token_id]
    batch = tok(["1+1=", "12+34="], padding=True)
    assert batch.input_ids[0][:2] == [0, 0] and batch.attention_mask[0][:2] == [0, 0]
    assert batch.input_ids[1][0] == tok.bos_token_id
    # Special tokens decode as themselves unless skipped.
    assert tok.decode([1, *tok("7", add_special_tokens=False).input_ids, 2]) == "<s>7</s>"


def test_tokenizer_saves_a_standard_tokenizer_json(tmp_path):
    tok = build_tiny_tokenizer()
    tok.save_pretrained(tmp_path)
    spec = json.loads((tmp_path / "tokenizer.json").read_text())
    assert spec["model"]["type"] == "WordLevel"
    loaded = AutoTokenizer.from_pretrained(tmp_path, local_files_only=True)
    for text in ARITHMETIC + TEXT:
        assert loaded(text).input_ids == tok(text).input_ids
        assert loaded.decode(loaded(text).input_ids, skip_special_tokens=True) == text
    assert (loaded.pad_token_id, loaded.bos_token_id, loaded.eos_token_id) == (0, 1, 2)
    assert loaded.padding_side == "left"


# -- model ----------------------------------------------------------------------------------


def test_tiny_model_architecture():
    tok = build_tiny_tokenizer()
    model = build_tiny_model(TinyConfig(), seed=0, tokenizer=tok)
    cfg = model.config
    assert cfg.head_dim == 64
    assert cfg.num_attention_heads * cfg.head_dim == cfg.hidden_size
    assert cfg.attention_dropout == 0.0
    assert cfg.vocab_size == len(tok)
    assert cfg.max_position_embeddings == 64
    assert (cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id) == (1, 2, 0)
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_tiny_model_is_deterministic_given_seed():
    a, b, c = (build_tiny_model(seed=s) for s in (0, 0, 1))
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.model.embed_tokens.weight, c.model.embed_tokens.weight)


def test_tiny_config_rejects_bad_head_counts():
    with pytest.raises(ValueError, match="num_key_value_heads"):
        TinyConfig(num_attention_heads=3, num_key_value_heads=2)
    with pytest.raises(ValueError, match="hidden_size"):
        TinyConfig(hidden_size=0)


# --- added with the mirrored layout ----------------------------------------------------------


def test_vocabulary_is_the_specials_then_the_characters_in_order():
    tok = build_tiny_tokenizer()
    vocab = tok.get_vocab()
    assert [vocab[t] for t in TINY_SPECIAL_TOKENS] == [0, 1, 2, 3]
    assert len(TINY_CHARACTERS) == 96 and TINY_CHARACTERS[0] == " " and TINY_CHARACTERS[-1] == "\n"
    assert [vocab[c] for c in TINY_CHARACTERS] == list(range(4, 100))
    # one id per character: "9" is the 26th printable character (chr(57) - 32 = 25) + 4 specials
    assert tok("9", add_special_tokens=False).input_ids == [ord("9") - 32 + 4]
    assert tok("\n", add_special_tokens=False).input_ids == [99]
    assert tok.model_max_length == TinyConfig.max_position_embeddings == 64


def test_to_llama_config_carries_every_field():
    tok = build_tiny_tokenizer()
    cfg = TinyConfig(hidden_size=192, num_hidden_layers=3, num_attention_heads=3,
                     num_key_value_heads=1, intermediate_size=80, max_position_embeddings=32,
                     rope_theta=500.0)  # fmt: skip
    llama = cfg.to_llama_config(tok)
    got = {k: getattr(llama, k) for k in ("vocab_size", "hidden_size", "intermediate_size",
           "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
           "max_position_embeddings", "tie_word_embeddings", "attention_dropout",
           "pad_token_id", "bos_token_id", "eos_token_id")}  # fmt: skip
    assert got == {
        "vocab_size": 100,
        "hidden_size": 192,
        "intermediate_size": 80,
        "num_hidden_layers": 3,
        "num_attention_heads": 3,
        "num_key_value_heads": 1,
        "head_dim": 64,
        "max_position_embeddings": 32,
        "tie_word_embeddings": True,
        "attention_dropout": 0.0,
        "pad_token_id": 0,
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    assert llama.rope_parameters["rope_theta"] == 500.0


def test_tiny_config_error_messages_name_the_value_and_the_fix():
    with pytest.raises(ValueError) as exc:
        TinyConfig(num_attention_heads=3, num_key_value_heads=2)
    assert str(exc.value) == (
        "num_attention_heads (3) is not a multiple of num_key_value_heads (2): choose a divisor"
    )
    with pytest.raises(TypeError, match=r"head_dim must be an integer >= 1, got 64.0 \(float\)"):
        TinyConfig(head_dim=64.0)  # type: ignore[arg-type]


def test_building_leaves_the_callers_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    model = build_tiny_model(TinyConfig(hidden_size=64, num_attention_heads=1,
                                        num_key_value_heads=1, num_hidden_layers=1,
                                        intermediate_size=64), seed=5)  # fmt: skip
    assert torch.equal(torch.rand(3), expected)
    assert model.generation_config.pad_token_id == 0
    assert sum(p.numel() for p in model.parameters()) == (
        100 * 64  # tied embedding and head
        + 4 * 64 * 64  # q, k, v, o
        + 3 * 64 * 64  # gate, up, down
        + 3 * 64  # two layer norms and the final one
    )
