"""trainers.models.loading: ``load_policy``, ``resolve_model_dir`` and ``weights_sha256``."""

from __future__ import annotations

import hashlib

import pytest
import torch
from transformers import LlamaForCausalLM

from trainers import cli
from trainers import models as models_mod
from trainers.models.loading import (
    build_tiny_tokenizer,
    load_policy,
    resolve_model_dir,
    weights_sha256,
)


def test_load_policy_missing_path_says_how_to_fix(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(FileNotFoundError) as exc:
        load_policy(str(missing))
    msg = str(exc.value)
    assert str(missing) in msg and "adaroll pretrain-tiny --out DIR" in msg
    with pytest.raises(ValueError, match=r"config\.json"):
        load_policy(str(tmp_path))


def test_load_policy_turns_dropout_off_and_sets_padding(tmp_path, one_layer_llama):
    config = one_layer_llama(vocab_size=100, attention_dropout=0.25, bos_token_id=1, eos_token_id=2)
    LlamaForCausalLM(config).save_pretrained(tmp_path)
    tok = build_tiny_tokenizer()
    tok.padding_side = "right"
    tok.pad_token = None
    tok.save_pretrained(tmp_path)
    model, loaded = load_policy(str(tmp_path), dtype=torch.bfloat16)
    assert model.config.attention_dropout == 0.0
    assert model.config.use_cache is True
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())
    assert loaded.padding_side == "left"
    assert loaded.pad_token == "</s>" and loaded.pad_token_id == loaded.eos_token_id


def test_load_policy_tiny(tiny_model_dir):
    assert tiny_model_dir == models_mod.tiny_model_dir()  # the default config's cache entry
    assert resolve_model_dir("tiny") == tiny_model_dir
    assert resolve_model_dir(str(tiny_model_dir)) == tiny_model_dir
    model, tok = load_policy("tiny")
    assert isinstance(model, LlamaForCausalLM)
    assert model.config.head_dim == 64 and model.config.attention_dropout == 0.0
    assert tok.padding_side == "left" and tok.pad_token_id == 0
    assert tok(["1+1="]).input_ids == build_tiny_tokenizer()(["1+1="]).input_ids


def test_a_missing_model_path_is_a_user_error_the_cli_reports(tmp_path, capsys):
    from trainers.models.paths import MissingPathError

    missing = tmp_path / "no-such-model"
    with pytest.raises(MissingPathError) as exc:
        load_policy(str(missing))
    # Both kinds: callers catching FileNotFoundError or ValueError treat it as the user's.
    assert isinstance(exc.value, FileNotFoundError) and isinstance(exc.value, ValueError)
    out = tmp_path / "run"
    argv = ["grpo", "--model", str(missing), "--steps", "1", "--no-progress", "--out", str(out)]
    with pytest.raises(SystemExit) as stop:
        cli.main([*argv, "--device", "cpu"])
    assert stop.value.code == 2
    assert str(missing) in capsys.readouterr().err
    # load_policy's own message says how to fix it
    assert "adaroll pretrain-tiny --out DIR" in str(exc.value)


# --- added with the mirrored layout ----------------------------------------------------------


def test_weights_sha256_reads_the_weight_files_in_name_order(tmp_path):
    assert weights_sha256(tmp_path) is None  # no weight files
    (tmp_path / "b.bin").write_bytes(b"second")
    (tmp_path / "a.safetensors").write_bytes(b"first")
    (tmp_path / "config.json").write_text("{}")  # not a weight file: not read
    full = hashlib.sha256(b"firstsecond").hexdigest()
    assert weights_sha256(tmp_path) == full[:12]
    assert weights_sha256(str(tmp_path), length=20) == full[:20]
    (tmp_path / "config.json").write_text('{"changed": true}')
    assert weights_sha256(tmp_path) == full[:12]


def test_resolve_model_dir_messages(tmp_path, monkeypatch):
    fix = (
        "run `adaroll pretrain-tiny --out DIR` or `adaroll warm-start --out DIR`, or pass a "
        "local model directory"
    )
    with pytest.raises(FileNotFoundError) as exc:
        resolve_model_dir(str(tmp_path / "gone"))
    assert str(exc.value) == (
        f"model {str(tmp_path / 'gone')!r} is neither 'tiny' nor an existing local directory "
        f"(nothing is downloaded): {fix}"
    )
    with pytest.raises(ValueError) as exc2:
        resolve_model_dir(str(tmp_path))
    assert str(exc2.value) == (
        f"model directory {str(tmp_path)!r} has no config.json, so it is not a saved Hugging "
        f"Face model: {fix}"
    )
    # "~" is the user's home
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_model_dir("~/m") == tmp_path / "m"


def test_load_policy_moves_to_the_device_and_keeps_a_saved_pad_token(tiny_model_dir):
    model, tok = load_policy(str(tiny_model_dir), dtype="float32", device="cpu")
    assert next(model.parameters()).device == torch.device("cpu")
    assert tok.pad_token == "<pad>" and model.generation_config.pad_token_id == 0
    assert not models_mod.has_dropout(model)
