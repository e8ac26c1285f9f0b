"""trainers.benchmarks.trl_overhead: the config, the summary worked by hand, the printed table,
the timers, and (with the trl extra) a one-block run of the four variants."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from trainers.benchmarks.trl_overhead import (
    RESULTS_FILE,
    VARIANTS,
    TrlOverheadConfig,
    _timer,
    main,
    parse_args,
    print_results,
    summarise,
)


def test_overhead_benchmark_times_all_four_variants(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")
    from trainers.benchmarks.trl_overhead import RESULTS_FILE, TrlOverheadConfig, main, parse_args

    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tiny_model_dir.parents[1]))
    cfg = parse_args(["--batch-size", "2", "--group-size", "4", "--blocks", "1", "--steps", "1"])
    assert cfg == TrlOverheadConfig(batch_size=2, group_size=4, blocks=1, steps=1)
    result = main(dataclasses.replace(cfg, out=str(tmp_path)))
    s = result["summary"]
    assert s["trl"]["rounds"] == s["uniform"]["rounds"] == 1
    # bamdp: its pilot and two rounds; prior_filter (a pool of 4 prompts x 2): one round
    assert s["bamdp"]["rounds"] == 3 and s["prior_filter"]["rounds"] == 1
    assert np.isfinite(s["prior_filter_ratio"]) and len(s["prior_filter_ratio_per_block"]) == 1
    for variant in VARIANTS:
        row = s[variant]
        assert row["seconds_per_step"] >= row["gen_score_seconds"] >= row["generate_seconds"] > 0
    assert np.isfinite(s["uniform_overhead"]) and 0 < s["uniform_own_share"] < 1
    assert json.loads((tmp_path / RESULTS_FILE).read_text())["summary"] == s
    with pytest.raises(ValueError, match="group_size must be >= 2"):
        TrlOverheadConfig(group_size=1)


# --- added with the mirrored layout ----------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_size": 0}, "batch_size must be an integer >= 1, got 0"),
        ({"steps": 2.0}, "steps must be an integer >= 1, got 2.0"),
        ({"blocks": True}, "blocks must be an integer >= 1, got True"),
        ({"warmup_steps": -1}, "warmup_steps must be an integer >= 0, got -1"),
        ({"threads": -2}, "threads must be an integer >= 0, got -2"),
        ({"group_size": 2.0}, "group_size must be an integer >= 2, got 2.0"),
        ({"group_size": 1}, "group_size must be >= 2 (TRL needs two), got 1"),
        ({"group_size": 2}, "the prior_filter variant hands TRL 2·B prompts of group_size/2"),
        ({"group_size": 6, "variants": "uniform,bamdp"}, "'trl' among them (the reference)"),
        ({"variants": "trl,thompson"}, "variants must name some of trl, uniform, bamdp"),
    ],
)
def test_config_errors(kwargs, message):
    with pytest.raises(ValueError) as exc:
        TrlOverheadConfig(**kwargs)
    assert str(exc.value).startswith(message) or message in str(exc.value)
    TrlOverheadConfig(warmup_steps=0, threads=0)  # both may be 0
    # G = 2 without the pooled variant is fine, and the variants keep VARIANTS' order
    assert TrlOverheadConfig(group_size=2, variants="bamdp,trl").variant_list == ["trl", "bamdp"]


def _step(seconds, gen_score, generate, reward, alloc=0.0, own=0.0, rounds=1.0):
    return {"seconds": seconds, "gen_score_seconds": gen_score, "generate_seconds": generate,
            "reward_seconds": reward, "alloc_seconds": alloc, "own_seconds": own,
            "rounds": rounds}  # fmt: skip


def test_summarise_by_hand():
    blocks = {
        # two blocks of two steps each
        "trl": [[_step(1.0, 0.6, 0.4, 0.1), _step(3.0, 0.8, 0.5, 0.1)],
                [_step(2.0, 0.7, 0.45, 0.1), _step(2.0, 0.7, 0.45, 0.1)]],
        "uniform": [[_step(2.2, 0.9, 0.4, 0.1, 0.02, 0.11), _step(2.2, 0.9, 0.4, 0.1, 0.02, 0.11)],
                    [_step(2.5, 1.0, 0.5, 0.1, 0.05, 0.25), _step(2.5, 1.0, 0.5, 0.1, 0.05, 0.25)]],
    }  # fmt: skip
    s = summarise(blocks)
    # s/step: the median of each block's mean (2.0 and 2.0 for trl, 2.2 and 2.5 for uniform)
    assert s["trl"]["seconds_per_step"] == pytest.approx(2.0)
    assert s["uniform"]["seconds_per_step"] == pytest.approx(2.35)
    # phases: medians over all steps
    assert s["trl"]["gen_score_seconds"] == pytest.approx(0.7)
    assert s["trl"]["train_seconds"] == pytest.approx(1.3)  # seconds - gen_score: .4 2.2 1.3 1.3
    assert s["uniform"]["other_gen_score_seconds"] == pytest.approx((0.38 + 0.35) / 2)
    assert s["uniform"]["rounds"] == 1.0
    # the overhead: per block 2.2/2 - 1 and 2.5/2 - 1; their median
    assert s["uniform_overhead_per_block"] == pytest.approx([0.1, 0.25])
    assert s["uniform_overhead"] == pytest.approx(0.175)
    assert s["uniform_own_share"] == pytest.approx((0.05 + 0.1) / 2)  # .11/2.2 and .25/2.5
    # the allocation share: median over steps of alloc / seconds (.02/2.2 twice, .05/2.5 twice)
    assert s["uniform"]["alloc_share"] == pytest.approx((0.02 / 2.2 + 0.05 / 2.5) / 2)
    assert s["trl"]["alloc_share"] == 0.0
    alone = summarise({"bamdp": blocks["uniform"]})
    assert "uniform_overhead" not in alone and "bamdp_ratio" not in alone
    assert list(alone) == ["bamdp"]
    # bamdp against trl: per block the ratio of mean s/step (2.2/2 and 2.5/2), and its median
    both = summarise({"trl": blocks["trl"], "bamdp": blocks["uniform"]})
    assert both["bamdp_ratio_per_block"] == pytest.approx([1.1, 1.25])
    assert both["bamdp_ratio"] == pytest.approx(1.175)
    pooled = summarise({"trl": blocks["trl"], "prior_filter": blocks["uniform"]})
    assert pooled["prior_filter_ratio"] == pytest.approx(1.175) and "bamdp_ratio" not in pooled


def test_print_results_table(capsys):
    row = {k: 0.5 for k in ("seconds_per_step", "gen_score_seconds", "generate_seconds",
           "reward_seconds", "alloc_seconds", "own_seconds", "other_gen_score_seconds",
           "train_seconds")}  # fmt: skip
    row["rounds"] = 2.0
    summary = {v: dict(row) for v in VARIANTS}
    summary["bamdp"]["alloc_share"] = 0.0175
    summary["prior_filter"]["alloc_share"] = 0.003
    summary.update(uniform_overhead=0.0625, uniform_overhead_per_block=[0.05, -0.01],
                   uniform_own_share=0.0123, bamdp_ratio=1.05,
                   bamdp_ratio_per_block=[1.04, 1.06], prior_filter_ratio=0.98,
                   prior_filter_ratio_per_block=[0.97, 0.99])  # fmt: skip
    cfg = dataclasses.asdict(TrlOverheadConfig(batch_size=4, group_size=4, blocks=2, steps=3))
    print_results({"config": cfg, "summary": summary})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("TRL GRPO steps on CPU: B=4, G=4, L=8; medians over 2 alternating "
                        "blocks × 3 steps")  # fmt: skip
    header = ["variant", "s/step", "gen+score", "generate", "reward", "allocator", "subclass"]
    header += ["other", "g+s", "loss+update", "rounds"]
    assert lines[1].split() == header
    assert lines[2].split() == ["trl", *["0.5000"] * 8, "2.0000"]
    assert [line.split()[0] for line in lines[2:6]] == ["trl", "uniform", "bamdp", "prior_filter"]
    assert lines[6] == "overhead (uniform vs trl, median of blocks): +6.2% (+5.0%, -1.0%)"
    assert lines[7] == "subclass's own code (uniform), median share of a step: 1.23%"
    assert lines[8] == "step time, bamdp (defaults) / trl, median of blocks: 1.050x (1.040, 1.060)"
    assert lines[9] == "bamdp's allocation, median share of a step: 1.75%"
    assert lines[10] == (
        "step time, prior_filter (pool) / trl, median of blocks: 0.980x (0.970, 0.990)"
    )
    assert lines[11] == "prior_filter's allocation, median share of a step: 0.30%"


def test_timer_adds_each_calls_seconds_and_keeps_the_result():
    class Thing:
        def work(self, x, *, y):
            if x < 0:
                raise ValueError("negative")
            return x + y

    thing, sink = Thing(), []
    _timer(thing, "work", sink)
    assert thing.work(2, y=3) == 5
    with pytest.raises(ValueError, match="negative"):
        thing.work(-1, y=0)
    assert len(sink) == 2 and all(s >= 0 for s in sink)  # timed even when it raises
    assert Thing().work(1, y=1) == 2  # only the instance is wrapped


def test_parse_args_and_main_write_the_results(tmp_path, monkeypatch, capsys):
    cfg = parse_args(["--blocks", "3", "--threads", "0", "--out", str(tmp_path)])
    assert (cfg.blocks, cfg.threads, cfg.out) == (3, 0, str(tmp_path))
    result = {"config": dataclasses.asdict(cfg), "versions": {},
              "summary": {v: {} for v in VARIANTS}, "blocks": {}}  # fmt: skip
    monkeypatch.setattr("trainers.benchmarks.trl_overhead.measure", lambda c: result)
    monkeypatch.setattr("trainers.benchmarks.trl_overhead.print_results", lambda r: None)
    assert main(cfg) is result
    assert json.loads((tmp_path / RESULTS_FILE).read_text()) == result
    assert capsys.readouterr().out == f"results: {tmp_path / RESULTS_FILE}\n"
