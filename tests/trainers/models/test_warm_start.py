"""trainers.models.warm_start: the tiny model's supervised warm start, its config and its cache."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from trainers import cli
from trainers.models.loading import (
    TINY_METADATA_FILE,
    build_tiny_model,
    build_tiny_tokenizer,
    ensure_tiny_model,
    load_policy,
    tiny_model_dir,
)
from trainers.models.warm_start import (
    IGNORE_INDEX,
    PretrainConfig,
    _batch_stream,
    _loss_summary,
    _lr_factor,
    encode_supervised,
    evaluate,
    train_and_save,
)
from trainers.models.warm_start import main as warm_start_main
from trainers.tasks import Example, make_task

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


# -- cache ------------------------------------------------------------------------------------


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


# -- the warm start ---------------------------------------------------------------------------


def test_warm_start_learned_and_leaves_a_spread(tiny_model_dir, tiny_policy):
    meta = json.loads((tiny_model_dir / TINY_METADATA_FILE).read_text())
    assert meta["config"] == PretrainConfig(out=meta["config"]["out"]).recipe(keep_out=True)
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
    # the same command again: the first model is kept in superseded/, not overwritten
    weights = (out / "model.safetensors").read_bytes()
    (out / "notes.txt").write_text("mine")
    assert cli.main([*argv[:3], "--seed", "4", *argv[5:]]) == 0
    (kept,) = (out / "superseded").iterdir()
    assert f"the earlier files of {out} are kept in {kept}" in capsys.readouterr().out
    assert (kept / "model.safetensors").read_bytes() == weights
    assert (kept / "notes.txt").read_text() == "mine"
    assert json.loads((out / TINY_METADATA_FILE).read_text())["config"]["seed"] == 4


def test_pretrain_tiny_command_rejects_bad_options(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["pretrain-tiny", "--steps", "0"])
    assert exc.value.code == 2
    assert "steps (0) must be a positive integer" in capsys.readouterr().err


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


# --- added with the mirrored layout ----------------------------------------------------------


def _id(c: str) -> int:
    """The tiny tokenizer's id of a printable character."""
    return ord(c) - 32 + 4


def test_encode_supervised_by_hand():
    tok = build_tiny_tokenizer()
    ids, labels = encode_supervised(tok, ["1+1=", "12+3="], ["2", "15"])
    bos, eos, pad, ign = 1, 2, 0, IGNORE_INDEX
    row0 = [bos, *map(_id, "1+1=2"), eos]
    row1 = [bos, *map(_id, "12+3=15"), eos]
    assert ids.tolist() == [[*row0, pad, pad], row1]
    assert labels.tolist() == [
        [ign] * 5 + [_id("2"), eos, ign, ign],
        [ign] * 6 + [_id("1"), _id("5"), eos],
    ]


def test_lr_factor_warms_up_linearly_then_decays_to_a_tenth():
    # 10 warm-up steps of 110
    assert [_lr_factor(s, 110, 10) for s in (0, 4, 9)] == pytest.approx([0.1, 0.5, 1.0])
    assert _lr_factor(10, 110, 10) == pytest.approx(1.0)  # cosine at its top
    assert _lr_factor(60, 110, 10) == pytest.approx(0.1 + 0.9 * 0.5)  # half way: cos = 0
    assert _lr_factor(110, 110, 10) == pytest.approx(0.1)
    assert _lr_factor(0, 5, 0) == pytest.approx(1.0)  # no warm-up


def test_loss_summary_by_hand():
    s = _loss_summary([float(x) for x in range(1, 41)])
    assert s["window"] == 2
    assert s["curve"] == [2 * i + 1.5 for i in range(20)]  # means of 1,2 / 3,4 / ...
    assert (s["first"], s["last"], s["min"]) == (2.5, 38.5, 1.0)  # means of the tenths
    short = _loss_summary([3.0, 1.0])
    assert short == {"first": 3.0, "last": 1.0, "min": 1.0, "window": 1, "curve": [3.0, 1.0]}


def test_level_weights_and_the_model_they_describe():
    cfg = PretrainConfig(level_weights="1,1,2,0,0,0,0,0", hidden_size=192, num_layers=3,
                         intermediate_size=96)  # fmt: skip
    assert cfg.weights().tolist() == [0.25, 0.25, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0]
    m = cfg.model_config()
    assert (m.hidden_size, m.num_hidden_layers, m.num_attention_heads, m.num_key_value_heads,
            m.head_dim, m.intermediate_size) == (192, 3, 3, 3, 64, 96)  # fmt: skip
    with pytest.raises(ValueError) as exc:
        PretrainConfig(level_weights="1,1")
    assert str(exc.value) == (
        "level_weights ('1,1') must be 8 comma-separated non-negative numbers, one per "
        "arithmetic level, not all 0, such as '1,1,1,1,1,1,0,0'"
    )


def test_batches_draw_only_weighted_levels_and_repeat_by_seed():
    train = [Example(i, f"p{i}", "1", level=i % 3) for i in range(30)]
    cfg = PretrainConfig(steps=4, batch_size=50, level_weights="0,1,0,0,0,0,0,0")
    a = _batch_stream(cfg, train, np.random.default_rng(0))
    assert a.shape == (4, 50)
    assert {train[i].level for i in a.ravel()} == {1}
    b = _batch_stream(cfg, train, np.random.default_rng(0))
    assert np.array_equal(a, b)


def test_train_and_save_needs_somewhere_to_write():
    with pytest.raises(ValueError, match=r"train_and_save needs a directory or cfg.out"):
        train_and_save(PretrainConfig(**SMALL))


def test_main_reuses_a_cached_build_and_prints_its_report(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(
        "trainers.models.warm_start.train_and_save",
        lambda cfg, directory=None: pytest.fail("a cached build must not train"),
    )
    cfg = PretrainConfig(**SMALL)
    target = tiny_model_dir(cfg)
    target.mkdir(parents=True)
    row = {"level": 0, "n": 4, "greedy": 0.75, "pass@1": 0.5, "pass@2": 0.75, "spread": 0.25}
    report = {"k": 2, "levels": [row], "overall": {**row, "level": "all"}}
    (target / TINY_METADATA_FILE).write_text(json.dumps({"report": report}))
    assert warm_start_main(cfg) == target
    printed = capsys.readouterr().out
    assert "tiny warm start, held-out (cached)" in printed
    assert f"already built: {target}" in printed.replace("\n", "")
    assert "0.75" in printed and "0.25" in printed
