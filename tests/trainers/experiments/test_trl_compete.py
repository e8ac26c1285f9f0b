"""trainers.experiments.trl_compete: the config, the held-out evaluation on a scripted engine, the
summary and table of ``main`` on scripted runs, and (with the trl extra) a two-step competition."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import numpy as np
import pytest
import torch

from trainers.experiments.trl_compete import (
    RESULTS_FILE,
    TrlCompeteConfig,
    held_out_pass_at_1,
    main,
    parse_args,
)


def test_competition_trains_each_allocator_and_evaluates(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")
    from trainers.experiments.trl_compete import RESULTS_FILE, TrlCompeteConfig, main, parse_args

    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tiny_model_dir.parents[1]))
    flags = ["--steps", "2", "--seeds", "1", "--batch-size", "4", "--group-size", "2"]
    flags += ["--utility", "snr(8)", "--belief-prior", "fitted", "--belief-group", "level"]
    cfg = parse_args(flags)
    cfg = dataclasses.replace(cfg, eval_size=8, eval_k=2, out=str(tmp_path))
    result = main(cfg)
    runs = {r["allocator"]: r for r in result["runs"]}
    assert set(runs) == {"uniform", "bamdp"}
    # the same warm start and the same evaluation samples before training
    assert runs["uniform"]["pass@1_before"] == runs["bamdp"]["pass@1_before"]
    for r in runs.values():  # pass@1 is a count of the 8 prompts x 2 samples' successes
        for key in ("pass@1_before", "pass@1_after"):
            assert r[key] * 16 == pytest.approx(round(r[key] * 16))
    # uniform: groups of G = 2, so a prompt's two rollouts carry gradient exactly when it is mixed
    u = runs["uniform"]
    assert u["gradient_rollouts"] == pytest.approx(2 * 4 * u["informative_frac"])
    for r in runs.values():  # every allocator generates B·G = 8 rollouts a step, no calibration
        assert r["rollouts_by_step"] == [8, 8] and r["calibration_rollouts"] == 0
        assert r["rollouts_per_step"] == r["train_rollouts_per_step"] == 8
    assert json.loads((tmp_path / RESULTS_FILE).read_text())["runs"] == result["runs"]
    saved = json.loads((tmp_path / RESULTS_FILE).read_text())
    assert (saved["config"]["utility"], saved["config"]["belief_group"]) == ("snr(8)", "level")
    with pytest.raises(ValueError, match="allocators is empty"):
        TrlCompeteConfig(allocators=" , ")
    with pytest.raises(ValueError, match="needs --belief-prior fitted"):
        TrlCompeteConfig(belief_group="level", belief_prior="fixed")
    with pytest.raises(ValueError, match="round_schedule"):
        TrlCompeteConfig(round_schedule="100,29")  # not B·G = 128 rollouts
    assert TrlCompeteConfig(round_schedule="96,32").round_schedule == "96,32"


# --- added with the mirrored layout ----------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seeds": 0}, "seeds must be an integer >= 1, got 0"),
        ({"steps": 1.5}, "steps must be an integer >= 1, got 1.5"),
        ({"eval_k": 0}, "eval_k must be an integer >= 1, got 0"),
        ({"workers": False}, "workers must be an integer >= 1, got False"),
        ({"group_size": 1}, "group_size must be >= 2 (TRL needs two), got 1"),
        ({"belief_prior": "learned"}, "belief_prior must be 'fixed' or 'fitted', got 'learned'"),
        ({"utility": "informativ"}, "Did you mean 'informative'"),
        ({"calibration_size": 0}, "calibration_size must be an integer >= 1, got 0"),
        ({"batch_size": 2, "group_size": 2, "round_schedule": "3,2"},
         "round_schedule: round schedule '3,2' hands out 5 rollouts, but the rounds hand out 4"),
    ],
)  # fmt: skip
def test_config_errors(kwargs, message):
    with pytest.raises(ValueError) as exc:
        TrlCompeteConfig(**kwargs)
    assert message in str(exc.value)
    TrlCompeteConfig(round_schedule="none", belief_group="none", belief_prior="fixed")


class _Scripted:
    """Stands in for ``HFEngine``: every sample of test prompt ``j`` is right when ``j`` is even."""

    seen: ClassVar[list] = []

    def __init__(self, model, tokenizer, **kw):
        type(self).seen.append((model.training, tokenizer))

    def generate(self, prompts, counts, sampling, *, seed):
        type(self).seen.append((len(prompts), list(counts), sampling.temperature, seed))
        index = np.repeat(np.arange(len(prompts)), counts)
        texts = [self.answers[int(i)] for i in index]
        return SimpleNamespace(prompt_index=index, texts=texts, completion_ids=[[5]] * len(texts))


def test_held_out_pass_at_1_on_a_scripted_engine(monkeypatch):
    from trainers.grpo.data_order import EVALUATION, derive_seed
    from trainers.grpo.evaluation import held_out_subset
    from trainers.models.tiny import build_tiny_tokenizer
    from trainers.tasks import make_task

    task = make_task("arithmetic", seed=0, num_train=8, num_test=40)
    cfg = TrlCompeteConfig(eval_size=10, eval_k=3)
    picked = held_out_subset(task.test, 10)
    _Scripted.answers = [e.answer if j % 2 == 0 else "x" for j, e in enumerate(picked)]
    _Scripted.seen = []
    monkeypatch.setattr("trainers.engines.hf.HFEngine", _Scripted)
    model, tok = torch.nn.Linear(2, 2), build_tiny_tokenizer()
    model.train()
    assert held_out_pass_at_1(model, tok, task, cfg) == pytest.approx(0.5)  # 5 of 10, all k
    assert _Scripted.seen == [(False, tok), (10, [3] * 10, 1.0, derive_seed(0, EVALUATION, 0))]
    assert model.training  # given back in train mode


def _fake_run(cfg, allocator, seed):
    return {"allocator": allocator, "seed": seed, "pass@1_before": 0.25,
            "pass@1_after": 0.25 + 0.1 * seed + (0.2 if allocator == "bamdp" else 0.0),
            "informative_frac": 0.5, "minutes": 1.0 + seed}  # fmt: skip


def test_main_means_over_seeds_prints_and_writes(tmp_path, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(
        "trainers.experiments.trl_compete.run_one",
        lambda cfg, a, s: calls.append((a, s)) or _fake_run(cfg, a, s),
    )
    cfg = parse_args(["--allocators", "uniform, ,bamdp,", "--seeds", "2", "--steps", "3",
                      "--out", str(tmp_path)])  # fmt: skip
    result = main(cfg)
    assert calls == [("uniform", 0), ("bamdp", 0), ("uniform", 1), ("bamdp", 1)]
    assert result["summary"] == {
        "uniform": {"pass@1_before": 0.25, "pass@1_after": pytest.approx(0.3),
                    "informative_frac": 0.5, "minutes": 1.5},
        "bamdp": {"pass@1_before": 0.25, "pass@1_after": pytest.approx(0.5),
                  "informative_frac": 0.5, "minutes": 1.5},
    }  # fmt: skip
    saved = json.loads((tmp_path / RESULTS_FILE).read_text())
    assert saved["runs"] == result["runs"] and saved["config"] == dataclasses.asdict(cfg)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(
        "TRL competition: tiny model, arithmetic, B=16, G=8, 3 steps, 2 seeds"
    )
    assert lines[1].split() == ["allocator", "pass@1_before", "pass@1_after", "informative_frac",
                                "minutes"]  # fmt: skip
    assert lines[2].split() == ["uniform", "0.2500", "0.3000", "0.5000", "1.5000"]
    assert lines[3].split() == ["bamdp", "0.2500", "0.5000", "0.5000", "1.5000"]
    assert lines[4] == f"results: {tmp_path / RESULTS_FILE}"


def test_cgrpo_without_its_extra_is_refused_before_any_run(monkeypatch):
    monkeypatch.setitem(sys.modules, "trl_cgrpo", None)  # as if trl-cgrpo were not installed
    with pytest.raises(ImportError, match=r'needs the TRL 1.14 line .*pip install -e ".\[cgrpo\]"'):
        TrlCompeteConfig(allocators="uniform, cgrpo")
    TrlCompeteConfig(allocators="uniform,bamdp")  # the others need no trl-cgrpo


def test_main_summary_skips_series_and_unmeasured_figures(tmp_path, monkeypatch, capsys):
    def fake(cfg, allocator, seed):
        cgrpo = allocator == "cgrpo"
        return {"allocator": allocator, "seed": seed, "pass@1_after": 0.5,
                "alloc_overhead": None if cgrpo else 0.01 * (seed + 1),
                "rollouts_per_step": 100.0 + seed if cgrpo else 8.0,
                "rollouts_by_step": [90 + seed, 110 + seed] if cgrpo else [8, 8]}  # fmt: skip

    monkeypatch.setattr("trainers.experiments.trl_compete.require_cgrpo", lambda: None)
    monkeypatch.setattr("trainers.experiments.trl_compete.run_one", fake)
    cfg = parse_args(["--allocators", "uniform,cgrpo", "--seeds", "2", "--out", str(tmp_path)])
    result = main(cfg)
    assert result["summary"] == {
        "uniform": {"pass@1_after": 0.5, "alloc_overhead": pytest.approx(0.015),
                    "rollouts_per_step": 8.0},
        "cgrpo": {"pass@1_after": 0.5, "alloc_overhead": None, "rollouts_per_step": 100.5},
    }  # fmt: skip
    assert [r["rollouts_by_step"] for r in result["runs"]][1] == [90, 110]  # kept in the runs
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split() == ["uniform", "0.5000", "0.0150", "8.0000"]
    assert lines[3].split() == ["cgrpo", "0.5000", "-", "100.5000"]
    saved = json.loads((tmp_path / RESULTS_FILE).read_text())
    assert saved["summary"]["cgrpo"]["alloc_overhead"] is None
