import json
import string
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

from trainers import cli
from trainers import models as models_mod
from trainers.models.loading import (
    TINY_METADATA_FILE,
    TinyConfig,
    build_tiny_model,
    build_tiny_tokenizer,
    ensure_tiny_model,
    load_policy,
    resolve_model_dir,
    tiny_model_dir,
)
from trainers.models.warm_start import PretrainConfig, evaluate, sample_completions, train_and_save
from trainers.tasks import make_task

ARITHMETIC = ["37+5=42", "0+0=0", "123+877=1000", "91-9=82", "12*34=408", "7*8="]
TEXT = [
    "Hello, world!",
    "two  spaces, a trailing space ",
    "line one\nline two\n",
    string.printable.replace("\t", "").replace("\r", "").replace("\x0b", "").replace("\x0c", ""),
    "",
]

# A run short enough for the unit tests (a few seconds); the real warm start is the cached one.
SMALL = dict(
    steps=30,
    batch_size=32,
    num_train=400,
    num_test=16,
    hidden_size=64,
    num_layers=1,
    intermediate_size=64,
    eval_samples=2,
    progress=False,
)


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


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"steps": 0}, "steps"),
        ({"hidden_size": 100}, "multiple of the head size 64"),
        ({"lr": 0.0}, "lr"),
        ({"warmup": 1.0}, "warmup"),
        ({"level_weights": "1,two"}, "comma-separated"),
        ({"level_weights": "1,1"}, "one per arithmetic level"),
        ({"level_weights": "0,0,0,0,0,0,0,0"}, "not all 0"),
        ({"level_weights": "1,1,1,1,1,1,-1,0"}, "non-negative"),
        ({"threads": -1}, "threads"),
    ],
)
def test_pretrain_config_rejects_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PretrainConfig(**kwargs)


# -- cache and load_policy ------------------------------------------------------------------


def test_tiny_model_dir_hashes_the_recipe_not_the_output(tmp_path, monkeypatch):
    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tmp_path))
    base = tiny_model_dir()
    assert base.parent == tmp_path / "models" and base.name.startswith("tiny-")
    assert tiny_model_dir(PretrainConfig(out="/elsewhere", progress=False)) == base
    assert tiny_model_dir(PretrainConfig(steps=7)) != base
    assert tiny_model_dir(PretrainConfig(seed=1)) != base


def test_ensure_tiny_model_builds_once_under_concurrency(tmp_path, monkeypatch):
    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tmp_path))
    calls = []

    def fake_train(cfg, directory):
        calls.append(directory)
        time.sleep(0.3)  # long enough for the other threads to reach the lock
        (tmp_path / "marker").write_text("x")
        out = Path(directory)
        (out / TINY_METADATA_FILE).write_text("{}")
        return out

    monkeypatch.setattr("trainers.models.warm_start.train_and_save", fake_train)
    cfg = PretrainConfig(**SMALL)
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(ensure_tiny_model(cfg, announce=False)))
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert results == [tiny_model_dir(cfg)] * 3
    assert (tiny_model_dir(cfg) / TINY_METADATA_FILE).is_file()
    # Only the finished directory and the lock file remain beside it; no temporary leftovers.
    leftovers = [p.name for p in (tmp_path / "models").iterdir()]
    assert sorted(leftovers) == sorted(
        [tiny_model_dir(cfg).name, f".{tiny_model_dir(cfg).name}.lock"]
    )


def test_ensure_tiny_model_cleans_up_a_failed_build(tmp_path, monkeypatch):
    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tmp_path))

    def failing_train(cfg, directory):
        raise RuntimeError("boom")

    monkeypatch.setattr("trainers.models.warm_start.train_and_save", failing_train)
    cfg = PretrainConfig(**SMALL)
    with pytest.raises(RuntimeError, match="boom"):
        ensure_tiny_model(cfg, announce=False)
    assert not tiny_model_dir(cfg).exists()
    assert [p.name for p in (tmp_path / "models").iterdir()] == [
        f".{tiny_model_dir(cfg).name}.lock"
    ]


def test_load_policy_missing_path_says_how_to_fix(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(FileNotFoundError) as exc:
        load_policy(str(missing))
    msg = str(exc.value)
    assert str(missing) in msg and "adaroll pretrain-tiny --out DIR" in msg
    with pytest.raises(ValueError, match=r"config\.json"):
        load_policy(str(tmp_path))


def _one_layer_llama(**kwargs):
    """A one-layer, one-head Llama config of width 64 (``kwargs`` set the rest)."""
    shape = dict(hidden_size=64, intermediate_size=64, num_hidden_layers=1, head_dim=64)
    return LlamaConfig(**shape, num_attention_heads=1, num_key_value_heads=1, **kwargs)


def test_load_policy_turns_dropout_off_and_sets_padding(tmp_path):
    config = _one_layer_llama(
        vocab_size=100, attention_dropout=0.25, bos_token_id=1, eos_token_id=2
    )
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


# -- the warm start -------------------------------------------------------------------------


def test_sampler_greedy_matches_transformers_generate(tiny_policy):
    model, tok = tiny_policy
    prompts = ["3+4=", "57+38=", "9*9=", "512+77=", "0+0="]
    ours = sample_completions(model, tok, prompts, temperature=0.0, max_new_tokens=6)
    enc = tok(prompts, padding=True, return_tensors="pt")
    out = model.generate(
        **enc, do_sample=False, max_new_tokens=6, eos_token_id=tok.eos_token_id, pad_token_id=0
    )
    theirs = tok.batch_decode(out[:, enc.input_ids.shape[1] :], skip_special_tokens=True)
    assert ours == theirs


def test_warm_start_learned_and_leaves_a_spread(tiny_model_dir, tiny_policy):
    meta = json.loads((tiny_model_dir / TINY_METADATA_FILE).read_text())
    assert meta["config"] == PretrainConfig(out=meta["config"]["out"]).__dict__
    loss = meta["loss"]
    assert np.isfinite(loss["last"]) and loss["last"] < 0.5 * loss["first"]
    report = meta["report"]
    levels = {row["level"]: row for row in report["levels"]}
    assert sorted(levels) == list(range(8))  # the report covers every level, trained or not
    # Easy levels mostly solved, the untrained three-digit levels not at all.
    assert (levels[0]["greedy"] * levels[0]["n"] + levels[1]["greedy"] * levels[1]["n"]) / (
        levels[0]["n"] + levels[1]["n"]
    ) >= 0.7
    assert max(row["greedy"] for row in levels.values()) >= 0.8
    assert levels[6]["greedy"] <= 0.05 and levels[7]["greedy"] <= 0.05
    # Middle levels partly solved: neither mastered nor hopeless, with room at pass@k.
    for lv in (2, 3, 5):
        assert 0.05 <= levels[lv]["pass@1"] <= 0.8, levels[lv]
        assert levels[lv][f"pass@{report['k']}"] >= levels[lv]["pass@1"] + 0.1, levels[lv]
    overall = report["overall"]
    assert 0.2 <= overall["pass@1"] <= 0.55
    assert overall[f"pass@{report['k']}"] >= overall["pass@1"] + 0.15
    rates = np.array(report["pass_rates"])
    assert ((rates > 0) & (rates < 1)).mean() >= 0.25  # GRPO has informative groups
    assert (rates == 0).mean() >= 0.1 and (rates == 1).mean() >= 0.05
    # The saved weights reproduce the report's greedy accuracy (recomputed here).
    model, tok = tiny_policy
    task = make_task("arithmetic", seed=0, num_train=10, num_test=meta["config"]["num_test"])
    easy = [ex for ex in task.test if ex.level <= 1]
    again = evaluate(model, tok, easy, num_samples=2, max_new_tokens=6, seed=0)
    for row in again["levels"]:
        assert row["greedy"] == pytest.approx(levels[row["level"]]["greedy"])


def test_pretrain_is_deterministic_given_seed(tmp_path):
    a = train_and_save(PretrainConfig(out=str(tmp_path / "a"), **SMALL))
    b = train_and_save(PretrainConfig(out=str(tmp_path / "b"), **SMALL))
    ma, _ = load_policy(str(a))
    mb, _ = load_policy(str(b))
    assert all(torch.equal(x, y) for x, y in zip(ma.parameters(), mb.parameters(), strict=True))
    ra = json.loads((a / TINY_METADATA_FILE).read_text())["report"]
    rb = json.loads((b / TINY_METADATA_FILE).read_text())["report"]
    assert ra == rb


def test_pretrain_tiny_command_writes_a_loadable_model(tmp_path, capsys):
    out = tmp_path / "tiny"
    argv = ["pretrain-tiny", "--out", str(out), "--seed", "3"]
    for key, value in SMALL.items():
        flag = "--" + key.replace("_", "-")
        argv += (
            [flag if value else "--no-" + flag[2:]]
            if isinstance(value, bool)
            else [flag, str(value)]
        )
    assert cli.main(argv) == 0
    for name in ("config.json", "model.safetensors", "tokenizer.json", TINY_METADATA_FILE):
        assert (out / name).is_file(), name
    meta = json.loads((out / TINY_METADATA_FILE).read_text())
    assert meta["config"]["seed"] == 3 and meta["config"]["out"] == str(out)
    assert meta["loss"]["last"] < meta["loss"]["first"]  # it learned something in 30 steps
    printed = capsys.readouterr().out
    assert "pass@1" in printed and "greedy" in printed
    model, _ = load_policy(str(out))
    init = build_tiny_model(PretrainConfig(**SMALL).model_config(), seed=3)
    assert not torch.equal(model.model.embed_tokens.weight, init.model.embed_tokens.weight)


def test_pretrain_tiny_command_rejects_bad_options(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["pretrain-tiny", "--steps", "0"])
    assert exc.value.code == 2
    assert "steps (0) must be a positive integer" in capsys.readouterr().err


# -- dropout, paths, errors -----------------------------------------------------------------


def test_disable_dropout_silences_modules_config_and_copied_rates():
    config = _one_layer_llama(vocab_size=50, attention_dropout=0.5)
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


def test_the_hf_engine_samples_without_the_dropout_modules_copied():
    """A model built with attention dropout (not through load_policy) and left in train mode:
    the engine still samples from the dropout-free policy the trainer scores."""
    from trainers.engines.base import SamplingSpec
    from trainers.engines.hf import HFEngine

    torch.manual_seed(0)
    model = LlamaForCausalLM(_one_layer_llama(vocab_size=50, attention_dropout=0.5, eos_token_id=2))
    model.train()
    assert models_mod.has_dropout(model)
    tok = build_tiny_tokenizer()
    prompts = [[1, 5, 7, 9], [1, 11]]
    gen = HFEngine(model, tok).generate(prompts, [2, 1], SamplingSpec(max_new_tokens=4), seed=3)
    assert model.training  # the engine gives the model back in the mode it found it
    model.eval()
    for row, ids, lp in zip(gen.prompt_index, gen.completion_ids, gen.logprobs, strict=True):
        full = torch.tensor([prompts[row] + ids])
        with torch.no_grad():
            logits = model(input_ids=full, use_cache=False).logits[0, len(prompts[row]) - 1 : -1]
        expect = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(ids)[:, None])
        torch.testing.assert_close(torch.from_numpy(lp), expect[:, 0], atol=1e-4, rtol=1e-4)
    models_mod.disable_dropout(model)
    assert not models_mod.has_dropout(model)


def test_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    from trainers.models.paths import cache_dir

    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    assert tiny_model_dir().parent == tmp_path / "c" / "models"
    monkeypatch.delenv("ADAROLL_CACHE_DIR")
    assert cache_dir() == Path.home() / ".cache" / "adaroll"
    assert cache_dir(tmp_path) == tmp_path


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


def test_the_tiny_build_prints_its_final_path_not_the_temporary_one(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tmp_path))
    cfg = PretrainConfig(**SMALL)
    path = ensure_tiny_model(cfg)
    printed = capsys.readouterr().out
    assert path == tiny_model_dir(cfg) and (path / TINY_METADATA_FILE).is_file()
    assert f"saved the warm-started tiny model to {path}" in printed
    assert ".tmp-" not in printed
    versions = json.loads((path / TINY_METADATA_FILE).read_text())["versions"]
    assert {"python", "torch", "transformers", "tokenizers"} <= set(versions)
