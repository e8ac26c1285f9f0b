"""The numbers of ``adaroll compete`` (``trainers.experiments.statistics``), worked by hand."""

from __future__ import annotations

import math
from typing import Any

import pytest

from trainers.experiments.statistics import (
    accuracy_row,
    curve_auc,
    eval_seconds,
    load_run,
    markdown,
    mechanism,
    paired,
    rollouts_to_reach,
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
              "minutes": 3.0, "paired_seeds": 1, "paired_reached": 1, "delta_final": 0.012,
              "delta_final_ci95": nan, "delta_auc": nan, "delta_auc_ci95": nan,
              "rollouts_ratio": 0.8, "seconds_ratio": None, "wins": 1}  # fmt: skip
    rows = [{**common, "entrant": "uniform", "rollout_saving": None},
            {**common, "entrant": "bamdp", "rollout_saving": -0.2}]  # fmt: skip
    text = markdown(rows, "uniform", 0.312, prov)
    assert text.splitlines()[0] == (
        "Warm start `m`, weights sha256 `abc`; tabulated 2026-01-01; command: `adaroll x`"
    )
    assert "| bamdp | 1 | 10.0 % | 31.2 % (± —) | 1,234 (1/1) | -20.0 % | 0.500 | 7.2 |" in text
    assert "| bamdp | 1 | +1.2 pts (± —) | — | 0.80× (1/1) | — | 1/1 |" in text
    paired_lines = [ln for ln in text.splitlines() if ln.startswith("| uniform | 1 | +")]
    assert paired_lines == []  # the baseline has no paired row
