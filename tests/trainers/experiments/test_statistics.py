"""The numbers of ``adaroll compete`` (``trainers.experiments.statistics``), worked by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from trainers.experiments.statistics import (
    STEP_COLUMNS,
    accuracy_row,
    bootstrap_ratio,
    censored_median,
    curve_auc,
    eval_seconds,
    load_entrant_runs,
    load_run,
    load_run_dir,
    markdown,
    mechanism,
    paired,
    paired_row,
    pass_k_of,
    read_steps_csv,
    rollouts_to_reach,
    signs,
    step_records,
    write_steps_csv,
)

#: Student's t quantile 0.975 with 1 degree of freedom (two seeds)
T1 = 12.706204736174707


def test_rollouts_to_reach_interpolates() -> None:
    curve = [(0.0, 0.2), (100.0, 0.3), (200.0, 0.5)]
    assert rollouts_to_reach(curve, 0.2) == 0.0
    assert rollouts_to_reach(curve, 0.4) == pytest.approx(150.0)
    assert rollouts_to_reach(curve, 0.6) is None
    # touching the target and falling back does not count: the crossing that holds does
    noisy = [(0.0, 0.2), (100.0, 0.45), (200.0, 0.3), (300.0, 0.5)]
    assert rollouts_to_reach(noisy, 0.4) == pytest.approx(250.0)
    assert rollouts_to_reach([(0.0, 0.2), (100.0, 0.5), (200.0, 0.3)], 0.4) is None


def test_curve_auc_is_the_mean_over_rollouts() -> None:
    assert curve_auc([(0.0, 0.0), (100.0, 1.0), (300.0, 1.0)]) == pytest.approx(250 / 300)
    assert curve_auc([(0.0, 0.5), (100.0, 0.5)]) == 0.5
    assert curve_auc([(40.0, 0.3)]) == 0.3


def test_runs_written_before_a_metric_existed_show_a_dash() -> None:
    old = [{"metrics": [{"step": 0, "gradient_rollouts": 6, "informative_frac": 0.5,
                         "step_seconds": 2.0, "alloc_overhead": 0.1}]}]  # fmt: skip
    m = mechanism(old)
    assert m["gradient_rollouts_per_step"] == 6.0 and m["alloc_overhead"] == 0.1
    assert math.isnan(m["informative_prompts_per_step"]) and math.isnan(m["rounds_per_step"])
    assert math.isnan(m["grad_norm_per_step"]) and math.isnan(m["update_norm_per_step"])


def test_norms_pool_over_the_steps_that_measured_them() -> None:
    runs = [{"metrics": [{"grad_norm": 1.0, "update_norm": 0.5},
                         {"grad_norm": 3.0, "update_norm": math.nan}]},
            {"metrics": [{"grad_norm": 2.0, "update_norm": math.nan}]}]  # fmt: skip
    m = mechanism(runs)
    assert m["grad_norm_per_step"] == 2.0 and m["update_norm_per_step"] == 0.5
    never = mechanism([{"metrics": [{"update_norm": math.nan}]}])
    assert math.isnan(never["update_norm_per_step"])  # measured nowhere: a dash, no warning


def run(seed: int, curve: list[tuple[float, float]], seconds: list[float] | None = None,
        minutes: float = 1.0) -> dict[str, Any]:  # fmt: skip
    """A finished run as ``load_run`` builds it, from its curve (and training seconds)."""
    evals = [
        {"step": i + 1, "rollouts_total": x, "pass@1": y, "seconds": s}
        for i, ((x, y), s) in enumerate(zip(curve, seconds or [x / 10 for x, _ in curve],
                                            strict=True))
    ]  # fmt: skip
    summary = {"minutes": minutes, "rollouts_total": curve[-1][0]}
    return load_run(seed, summary, evals, [], None)


def test_eval_seconds_from_the_evaluations_or_summed_from_the_steps() -> None:
    metrics = [{"step": 1, "step_seconds": 2.0}, {"step": 2, "step_seconds": 3.0},
               {"step": 3, "step_seconds": 4.0}]  # fmt: skip
    assert eval_seconds([{"step": 2}, {"step": 3}], metrics) == [5.0, 9.0]
    assert eval_seconds([{"step": 2, "seconds": 1.5}], metrics) == [1.5]
    r = load_run(0, {}, [{"step": 2, "rollouts_total": 32, "pass@1": 0.25}], metrics, None)
    assert r["curve"] == [(32.0, 0.25)] and r["seconds"] == [5.0]


def test_paired_differences_ratios_and_wins_by_hand() -> None:
    base = [run(0, [(0.0, 0.2), (100.0, 0.4)]), run(1, [(0.0, 0.2), (100.0, 0.3)])]
    # seed 0 reaches 0.4 at 50 rollouts (5 s); seed 1 reaches 0.3 at 100 (10 s)
    other = [run(0, [(0.0, 0.2), (100.0, 0.6)]), run(1, [(0.0, 0.3), (100.0, 0.3)]),
             run(7, [(0.0, 0.9), (100.0, 0.9)])]  # fmt: skip
    p = paired(base, other)
    assert p["seeds"] == [0, 1]  # seed 7 has no baseline run: not paired
    assert p["delta_final"] == pytest.approx([0.2, 0.0])
    assert p["delta_final_mean"] == pytest.approx(0.1)
    assert p["delta_final_ci95"] == pytest.approx(T1 * 0.1)  # sd 0.1·√2, over √2 seeds
    assert p["delta_auc"] == pytest.approx([0.4 - 0.3, 0.3 - 0.25])
    assert p["wins"] == 1  # a tie is no win
    assert p["rollouts_to_base_final"] == pytest.approx([50.0, 0.0])
    assert p["base_rollouts_to_final"] == pytest.approx([100.0, 100.0])
    assert p["rollouts_ratio"] == pytest.approx(25.0 / 100.0)
    assert p["seconds_ratio"] == pytest.approx(2.5 / 10.0)
    assert p["reached"] == 2
    never = paired(base, [run(0, [(0.0, 0.1), (100.0, 0.3)])])
    assert never["rollouts_to_base_final"] == [None] and never["rollouts_ratio"] is None
    assert never["seconds_ratio"] is None and never["reached"] == 0


def test_accuracy_row_by_hand() -> None:
    runs = [run(0, [(0.0, 0.1), (100.0, 0.5)], minutes=2.0),
            run(1, [(0.0, 0.3), (100.0, 0.3)], minutes=4.0)]  # fmt: skip
    row = accuracy_row("mine", "bamdp", runs, target=0.3)
    assert (row["entrant"], row["allocator"], row["seeds"]) == ("mine", "bamdp", 2)
    assert row["start_pass@1"] == pytest.approx(0.2) and row["final_pass@1"] == pytest.approx(0.4)
    assert row["ci95"] == pytest.approx(T1 * 0.1)  # sd 0.1·√2, over √2 seeds
    assert row["auc_pass@1"] == pytest.approx((0.3 + 0.3) / 2)
    assert row["rollouts_to_target"] == pytest.approx((50.0 + 0.0) / 2)
    assert row["reached"] == "2/2" and row["minutes"] == 3.0 and row["rollouts"] == 100
    short = accuracy_row("mine", "bamdp", runs, target=0.45)  # seed 1 never gets there
    assert short["rollouts_to_target"] is None and short["reached"] == "1/2"


def test_markdown_tables_with_one_seed_show_undefined_intervals() -> None:
    prov = {"model": "m", "weights_sha256": "abc", "date": "2026-01-01", "command": "adaroll x"}
    nan = math.nan
    common = {"seeds": 1, "start_pass@1": 0.1, "final_pass@1": 0.312, "ci95": nan,
              "rollouts_to_target": 1234.0, "reached": "1/1", "informative_frac": 0.5,
              "gradient_rollouts_per_step": 7.25, "informative_prompts_per_step": 3.0,
              "rounds_per_step": 2.0, "seconds_per_step": 1.5, "alloc_overhead": 0.02,
              "minutes": 3.0, "pass_k": None, "final_pass@k": nan, "final_pass@k_ci95": nan,
              "grad_norm_per_step": 1.25, "update_norm_per_step": nan}  # fmt: skip
    p = {"seeds": [0], "delta_final_mean": 0.012, "delta_final_ci95": nan,
         "signs_final": [1, 0, 0], "delta_pass_k_mean": nan, "delta_pass_k_ci95": nan,
         "signs_pass_k": None, "delta_auc_mean": nan, "delta_auc_ci95": nan, "signs_auc": None,
         "rollouts_ratio": 0.8, "rollouts_ratio_ci95": None, "seconds_ratio": None,
         "seconds_ratio_ci95": None, "step_seconds_ratio": 1.5, "reached": 1,
         "wins": 1}  # fmt: skip
    rows = [{**common, **paired_row(None), "entrant": "uniform", "rollout_saving": None},
            {**common, **paired_row(p), "entrant": "bamdp", "rollout_saving": -0.2}]  # fmt: skip
    text = markdown(rows, "uniform", 0.312, prov, notes=["A note."])
    assert text.splitlines()[0] == (
        "Warm start `m`, weights sha256 `abc`; tabulated 2026-01-01; command: `adaroll x`"
    )
    assert (
        "| bamdp | 1 | 10.0 % | 31.2 % (± —) | 1,234 (1/1) | -20.0 % | 1.50 | 0.500 | 7.2 |"
    ) in text
    # no pass@k (evaluated with k = 1): no pass@k columns; one seed: no intervals
    assert "| bamdp | 1 | +1.2 pts (± —) | 1/0/0 | — | — | 0.80× (1/1) | 1.50× | — |" in text
    assert "pass@k" not in text and "final pass@" not in text.replace("final pass@1", "")
    assert "| bamdp | 7.2 | 3.0 | 0.500 | 2.0 | 1.25 | — | 1.50 | 2.0 % |" in text
    paired_lines = [ln for ln in text.splitlines() if ln.startswith("| uniform | 1 | +")]
    assert paired_lines == []  # the baseline has no paired row
    assert text.splitlines()[-1] == "A note."
    # a seed that never reached the target: no ratio and no interval, k/n said instead
    short = {**rows[1], **paired_row({**p, "seeds": [0, 1], "reached": 1})}
    assert "| — (1/2 reached) | 1.50× | — |" in markdown([rows[0], short], "uniform", 0.3, prov)


# --- steps.csv ---------------------------------------------------------------------------------
def test_steps_csv_keeps_the_table_columns_to_six_digits(tmp_path: Path) -> None:
    metrics = [
        {"step": 1, "rollouts": 512, "gradient_rollouts": 192, "informative_frac": 0.375,
         "grad_norm": 2.2880632877349854, "update_norm": 0.11602647751092651,
         "step_seconds": 0.2124429590003274, "alloc_overhead": 1.23456789e-05, "loss": 0.5},
        {"step": 2, "rollouts": 512, "gradient_rollouts": 0, "informative_frac": 0.0,
         "grad_norm": 3.0, "update_norm": math.nan, "step_seconds": 12345678.9,
         "alloc_overhead": 0.0},
        {"step": 3, "rollouts": 512, "gradient_rollouts": 7, "informative_frac": 0.5,
         "step_seconds": 1.0, "alloc_overhead": 0.5},  # no norms on this step
    ]  # fmt: skip
    path = tmp_path / "steps.csv"
    write_steps_csv(metrics, path)
    lines = path.read_text().splitlines()
    # only the columns the tables read, in STEP_COLUMNS order, and only those some step holds
    assert lines[0] == ("step,rollouts,gradient_rollouts,informative_frac,grad_norm,update_norm,"
                        "step_seconds,alloc_overhead")  # fmt: skip
    assert lines[1] == "1,512,192,0.375,2.28806,0.116026,0.212443,1.23457e-05"
    assert lines[2] == "2,512,0,0,3,nan,1.23457e+07,0"
    assert lines[3] == "3,512,7,0.5,,,1,0.5"
    back = read_steps_csv(path)
    assert back[0] == {"step": 1, "rollouts": 512, "gradient_rollouts": 192,
                       "informative_frac": 0.375, "grad_norm": 2.28806, "update_norm": 0.116026,
                       "step_seconds": 0.212443, "alloc_overhead": 1.23457e-05}  # fmt: skip
    assert math.isnan(back[1]["update_norm"]) and back[1]["step_seconds"] == 12345700.0
    assert "grad_norm" not in back[2] and "update_norm" not in back[2]  # absent stays absent
    assert set(STEP_COLUMNS) >= {k for m in back for k in m}


def _run_dir(d: Path, metrics: list[dict[str, Any]], seed: int = 0) -> Path:
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps({"minutes": 1.0, "rollouts_total": 64}))
    evals = [{"step": 0, "rollouts_total": 0, "pass@1": 0.25, "pass@8": 0.5},
             {"step": 2, "rollouts_total": 64, "pass@1": 0.375, "pass@8": 0.625}]  # fmt: skip
    (d / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    (d / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    return d


def test_a_run_loads_alike_from_metrics_jsonl_or_steps_csv(tmp_path: Path) -> None:
    metrics = [{"step": s, "gradient_rollouts": 10 * s + 1, "informative_prompts": s,
                "informative_frac": s / 7, "rounds": 2, "grad_norm": 1 / s,
                "update_norm": math.nan if s % 2 else s / 3, "step_seconds": 0.1 * s + 1 / 3,
                "alloc_overhead": 0.01 * s, "loss": 1.0, "entropy": 0.5}
               for s in (1, 2, 3)]  # fmt: skip
    d = _run_dir(tmp_path / "run", metrics)
    full = load_run_dir(d, 0)
    assert (d / "steps.csv").is_file()  # written beside metrics.jsonl
    assert full["metrics"][0]["grad_norm"] == 1.0 and "loss" not in full["metrics"][0]
    assert full["pass_k"] == 8 and full["final_pass_k"] == 0.625
    (d / "metrics.jsonl").unlink()
    small = load_run_dir(d, 0)
    assert [m["step"] for m in small["metrics"]] == [1, 2, 3]
    assert small["curve"] == full["curve"]  # eval.jsonl either way
    assert small["seconds"] == pytest.approx(full["seconds"], rel=1e-5)  # summed step seconds
    for key, value in mechanism([full]).items():
        assert mechanism([small])[key] == pytest.approx(value, rel=1e-5), key
    prov = {"model": "m", "weights_sha256": "abc", "date": "d", "command": "c"}

    def table(run: dict[str, Any]) -> str:
        row = {**accuracy_row("a", "uniform", [run], 0.3), **mechanism([run]), **paired_row(None),
               "rollout_saving": None}  # fmt: skip
        return markdown([row], "a", 0.3, prov)

    assert table(small) == table(full)
    with pytest.raises(ValueError, match=r"neither metrics.jsonl nor steps.csv"):
        step_records(tmp_path / "run" / "nothing")


def test_an_entrants_runs_load_by_seed_and_stopped_ones_are_set_apart(tmp_path: Path) -> None:
    metrics = [{"step": 1, "gradient_rollouts": 3, "step_seconds": 0.5}]
    for s in (10, 2, 0):
        _run_dir(tmp_path / "uniform" / f"seed{s}", metrics)
    (tmp_path / "uniform" / "seed5").mkdir()  # started, no summary yet
    (tmp_path / "uniform" / "seed_notes").mkdir()  # not a seed directory
    stopped = tmp_path / "uniform" / "seed2" / "summary.json"
    stopped.write_text(json.dumps({"steps": 7, "stopped_by": "SIGINT", "minutes": 1.0}))
    runs, left_out = load_entrant_runs(tmp_path / "uniform")
    assert [r["seed"] for r in runs] == [0, 10]  # numeric order, not text order
    assert left_out == ["seed 2 (stopped by SIGINT after step 7)"]
    runs, left_out = load_entrant_runs(tmp_path / "uniform", seeds=[10, 4])
    assert [r["seed"] for r in runs] == [10] and left_out == []
    assert load_entrant_runs(tmp_path / "nobody") == ([], [])


def test_steps_csv_is_rewritten_when_metrics_grow(tmp_path: Path) -> None:
    import os

    d = _run_dir(tmp_path / "run", [{"step": 1, "gradient_rollouts": 3}])
    step_records(d)
    assert read_steps_csv(d / "steps.csv") == [{"step": 1, "gradient_rollouts": 3}]
    with (d / "metrics.jsonl").open("a") as fh:
        fh.write(json.dumps({"step": 2, "gradient_rollouts": 4}) + "\n")
    old = (d / "steps.csv").stat().st_mtime - 10
    os.utime(d / "steps.csv", (old, old))  # older than metrics.jsonl
    assert len(step_records(d)) == 2 and len(read_steps_csv(d / "steps.csv")) == 2


# --- few seeds: sign counts, pass@k, bootstrap ------------------------------------------------
def test_signs_count_ties_within_float_noise() -> None:
    assert signs([0.1 + 0.2 - 0.3, 0.5, -0.2, math.nan]) == (1, 1, 1)
    assert signs([]) == (0, 0, 0)


def test_pass_k_is_the_common_largest_k() -> None:
    evals = [{"pass@1": 0.1, "pass@8": 0.3, "pass@1/level0": 0.2},
             {"pass@1": 0.2, "pass@8": 0.4, "pass@4": 0.3}]  # fmt: skip
    assert pass_k_of(evals) == 8
    assert pass_k_of([{"pass@1": 0.1}]) is None and pass_k_of([]) is None
    assert pass_k_of([{"pass@1": 0.1, "pass@8": 0.3}, {"pass@1": 0.2}]) is None


def test_bootstrap_ratio_against_the_exact_resampling_distribution() -> None:
    # two seeds: resamples (1, 1), (1, 3), (3, 1), (3, 3) over a base of 2, each 1/4 likely:
    # ratios 0.5 (1/4), 1.0 (1/2), 1.5 (1/4): the 2.5 and 97.5 percentiles are 0.5 and 1.5
    assert bootstrap_ratio([1.0, 3.0], [2.0, 2.0]) == (0.5, 1.5)
    assert bootstrap_ratio([1.0], [2.0]) is None  # one seed: no interval
    # a resample whose base mean is 0 is left out: of (0,1), (1,0), (1,1) the ratios 1.5, 1.5, 1
    assert bootstrap_ratio([1.0, 2.0], [0.0, 2.0]) == (1.0, 1.5)
    assert bootstrap_ratio([1.0, 2.0], [0.0, 0.0]) is None
    # the same seed gives the same interval
    a = bootstrap_ratio([1.0, 2.5, 4.0, 3.0], [2.0, 3.0, 2.5, 4.0])
    assert a == bootstrap_ratio([1.0, 2.5, 4.0, 3.0], [2.0, 3.0, 2.5, 4.0])
    assert a is not None and a[0] < (10.5 / 11.5) < a[1]


def test_censored_median_counts_unreached_runs_as_larger_than_any() -> None:
    # three of five reached: the median is the third smallest, the unreached sort last
    med, ci = censored_median([0.9, None, 0.6, None, 0.7])
    assert med == 0.9
    assert ci is not None and ci[0] == 0.6 and ci[1] == math.inf
    # a majority unreached: the median itself is "not reached"
    assert censored_median([None, None, 0.5])[0] == math.inf
    # all reached: an ordinary median without interpolation, the interval inside the values
    med, ci = censored_median([0.5, 0.6, 0.8, 0.9, 1.0])
    assert med == 0.8 and ci is not None and 0.5 <= ci[0] <= med <= ci[1] <= 1.0
    assert censored_median([0.7]) == (0.7, None)  # one value: no interval
    # two values resampled: (a,a), (a,b), (b,a), (b,b); inverted_cdf medians a, a, a, b
    assert censored_median([0.4, 0.8]) == (0.4, (0.4, 0.8))


def test_paired_pass_k_and_signs_by_hand() -> None:
    def run_k(seed: int, final: float, final_k: float) -> dict[str, Any]:
        evals = [{"step": 0, "rollouts_total": 0, "pass@1": 0.1, "pass@4": 0.2, "seconds": 0.0},
                 {"step": 1, "rollouts_total": 10, "pass@1": final, "pass@4": final_k,
                  "seconds": 1.0}]  # fmt: skip
        return load_run(seed, {}, evals, [{"step": 1, "step_seconds": 1.0 + seed}], None)

    base = [run_k(0, 0.3, 0.5), run_k(1, 0.3, 0.5), run_k(2, 0.3, 0.5)]
    other = [run_k(0, 0.4, 0.5), run_k(1, 0.2, 0.75), run_k(2, 0.3, 0.25)]
    p = paired(base, other)
    assert p["pass_k"] == 4 and p["delta_pass_k"] == [0.0, 0.25, -0.25]
    assert p["signs_pass_k"] == [1, 1, 1] and p["signs_final"] == [1, 1, 1]
    assert p["delta_pass_k_mean"] == 0.0
    assert p["step_seconds_ratio"] == 1.0  # the same seconds per step, seed by seed
    row = paired_row(p)
    assert row["signs_pass_k"] == "1/1/1" and row["paired_seeds"] == 3
    assert row["rollouts_ratio_ci95_low"] is None  # seed 1 never reached 0.3: no interval
    assert row["rollouts_ratio"] is None and row["paired_reached"] == 2


def test_reach_ratios_divide_by_the_baselines_own_and_keep_unreached_as_none():
    from trainers.experiments.statistics import reach_ratios

    p = {
        "rollouts_to_base_final": [300.0, None, 200.0],
        "base_rollouts_to_final": [400.0, 500.0, 100.0],
    }
    assert reach_ratios(p) == [0.75, None, 2.0]
    with pytest.raises(ValueError):  # seeds must pair up
        reach_ratios({"rollouts_to_base_final": [1.0], "base_rollouts_to_final": [1.0, 2.0]})
