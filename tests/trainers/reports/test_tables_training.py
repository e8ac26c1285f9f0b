"""The training page's blocks (``trainers.reports.tables_training``) on tiny hand-made files."""

from __future__ import annotations

import json
from typing import Any

from trainers.reports.tables_training import (
    _policy,
    _pts,
    _settings,
    _trl_table,
    final_competition,
    first_competition,
    rounds_schedule,
    rounds_sim,
    screen,
    step_time_rounds,
)

PAGE = "training"  # the page of the report_folder fixture's Output


def _jsonl(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def test_points_settings_and_policy_names() -> None:
    assert _pts(0.031, 0.012) == "+3.1 ± 1.2 pts"
    assert _pts(-0.005, None) == "-0.5 pts"
    assert _pts(None, 0.1) == "—"
    assert _settings({"name": "b", "allocator": "bamdp", "rounds": 2, "prior": "rlvr"}) == (
        "`bamdp` (rounds 2, prior rlvr)"
    )
    assert _settings({"name": "u", "allocator": "uniform"}) == "`uniform`"
    assert _policy("runs/bamdp-r2/seed1/checkpoints/step-001200") == (
        "`bamdp-r2`'s model at step 1,200 (seed 1)"
    )
    assert _policy("Qwen/tiny") == "the `Qwen/tiny` warm start"


def test_final_competition_pairs_every_entrant_with_the_first(report_folder: Any) -> None:
    cols = ("entrant,rounds_per_step,final_pass@1,ci95,delta_final,delta_final_ci95,delta_auc,"
            "delta_auc_ci95,rollouts_ratio,paired_reached,paired_seeds,wins,trained_per_step,"
            "informative_prompts_per_step,alloc_overhead,seeds,start_pass@1")  # fmt: skip
    csv = (
        f"{cols}\n"
        "uniform,1,0.30,0.02,,,,,,,,,40.0,5.0,0.001,3,0.25\n"
        "bamdp,2,0.34,0.01,0.04,0.015,0.02,0.01,0.75,2,3,3,45.5,,0.0125,3,0.25\n"
    )
    entrants = (
        "- name: uniform\n  allocator: uniform\n- name: bamdp\n  allocator: bamdp\n  rounds: 2\n"
    )
    data, out = report_folder({"results_all.csv": csv, "final_all_entrants.yaml": entrants})
    table, _, note = final_competition.make(data, out).partition("\n\n")
    assert table.splitlines()[1:] == [
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        "| uniform | 1 | 30.0 ± 2.0 % | — | — | — | — | 40.0 | 5.0 | 0.1 % |",
        "| bamdp | 2 | 34.0 ± 1.0 % | +4.0 ± 1.5 pts | +2.0 ± 1.0 pts | 0.75× (2/3) | 3/3 | 45.5 "
        "| — | 1.2 % |",
    ]
    assert "rollouts to uniform's final" in table.splitlines()[0]
    assert note.startswith("3 seeds each, starting at held-out pass@1 25.0 %;")
    assert "Entrants (`final_all_entrants.yaml`): `uniform`: `uniform`; `bamdp`: `bamdp` " in note
    assert "(rounds 2)." in note


def test_step_time_rounds_one_row_a_report_warm_starts_first(report_folder: Any) -> None:
    def report(model: str, rows: list[tuple[str, float, float]]) -> dict[str, Any]:
        return {"config": {"grpo": {"model": model}},
                "rows": [{"setting": s, "step_seconds": t, "relative_step_time": r}
                         for s, t, r in rows]}  # fmt: skip

    data, out = report_folder({
        "bench_rounds_a.json": report("runs/u/seed0/checkpoints/step-0500",
                                      [("uniform", 2.0, 1.0), ("bamdp ×2", 3.0, 1.5)]),
        "bench_rounds_b.json": report("tiny", [("uniform", 1.25, 1.0), ("bamdp ×2", 2.5, 2.0),
                                               ("bamdp ×8", 5.0, 4.0)]),
    })  # fmt: skip
    table = step_time_rounds.make(data, out).split("\n\n")[0]
    assert table == (
        "| policy the steps start from | timed beside `uniform` | report | `uniform` s/step "
        "| bamdp ×2 | bamdp ×8 |\n|---|---|---|---:|---:|---:|\n"
        "| the `tiny` warm start | bamdp ×2, bamdp ×8 | `bench_rounds_b.json` | 1.250 | 2.00× "
        "| 4.00× |\n"
        "| `u`'s model at step 500 (seed 0) | bamdp ×2 | `bench_rounds_a.json` | 2.000 | 1.50× "
        "| — |"
    )


def test_screen_joins_the_curves_with_the_tabulators_columns(report_folder: Any) -> None:
    tabulated = (
        "| entrant | Δ final pass@1 (95 % CI) | Δ AUC (95 % CI) | rollouts to target, ratio "
        "(reached) |\n|---|---|---|---|\n| bamdp-2rounds | +1.0 ± 0.5 | +0.5 ± 0.2 | 0.8 (2/2) |"
        "\n\n| entrant | rollouts with gradient | distinct informative prompts |\n|---|---|---|\n"
        "| uniform | 300 | 40 |\n| bamdp-8rounds | 310 | 41 |\n| bamdp-2rounds | 320 | 42 |\n"
        "| bamdp-384+128 | 330 | 43 |\n"
    )
    files: dict[str, Any] = {"screen_all_table.md": tabulated}
    finals = {"uniform-r8": (0.3, 0.32), "bamdp-r8": (0.31, 0.33), "bamdp-r2": (0.35, 0.36),
              "bamdp-384+128": (0.2, 0.4)}  # fmt: skip
    for stem, (a, b) in finals.items():
        for k, p in enumerate((a, b)):
            files[f"screen_{stem}-seed{k}.eval.jsonl"] = _jsonl({"pass@1": 0.1}, {"pass@1": p})
    data, out = report_folder(files)
    rows = screen.make(data, out).split("\n\n")[0].splitlines()[2:]
    assert rows == [
        "| uniform | 31.0 % (30.0, 32.0) | — | — | — | 300 | 40 |",
        "| bamdp-8rounds | 32.0 % (31.0, 33.0) | — | — | — | 310 | 41 |",
        "| bamdp-2rounds | 35.5 % (35.0, 36.0) | +1.0 ± 0.5 | +0.5 ± 0.2 | 0.8 (2/2) | 320 | 42 |",
        "| bamdp-384+128 | 30.0 % (20.0, 40.0) | — | — | — | 330 | 43 |",
    ]


def test_rounds_sim_one_column_a_rounds_count(report_folder: Any) -> None:
    text = (
        "header line\n"
        "snr(8) rounds=1 uniform util= 16.8 grad_rollouts= 310.2 inf_frac=0.606\n"
        "snr(8) rounds=1 bamdp util= 17.4 grad_rollouts= 343.2 inf_frac=0.552\n"
        "snr(8) rounds=4 bamdp util= 17.9 grad_rollouts= 360.0 inf_frac=0.500\n"
    )
    data, out = report_folder({"rounds_sim.txt": text})
    assert rounds_sim.make(data, out).split("\n\n")[0] == (
        "| utility | allocator: gradient-carrying rollouts / step | 1 round | 4 rounds |\n"
        "|---|---|---:|---:|\n| snr(8) | uniform | 310.2 | — |\n| snr(8) | bamdp | 343.2 | 360.0 |"
    )


def test_rounds_schedule_cuts_out_the_table_and_the_uniform_line(report_folder: Any) -> None:
    text = (
        "$ adaroll bench ...\n\n| rounds | bamdp |\n|---|---:|\n| 2 | 17.9 |\n\n"
        "uniform (1 round): 16.8\nreading\n"
    )
    data, out = report_folder({"rounds_schedule_sim.txt": text})
    assert rounds_schedule.make(data, out).startswith(
        "| rounds | bamdp |\n|---|---:|\n| 2 | 17.9 |\n\nuniform (1 round): 16.8\n\n"
        "From `rounds_schedule_sim.txt`"
    )


def test_first_competition_is_the_committed_table(report_folder: Any) -> None:
    data, out = report_folder({"table.md": "# First\n\n| a |\n|---|\n| 1 |\n"})
    assert first_competition.make(data, out).startswith(
        "`results/compete_first/table.md`, as its tabulator wrote it:\n\n| a |\n|---|\n| 1 |\n\n"
        "The runs' directories were not committed"
    )


def test_trl_table_per_seed_values_in_seed_order() -> None:
    summary = {"pass@1_before": 0.25, "pass@1_after": 0.3, "train_reward_first_quarter": 0.2,
               "train_reward_last_quarter": 0.35, "informative_frac": 0.5,
               "gradient_rollouts": 64.0, "alloc_overhead": 0.0}  # fmt: skip
    report = {
        "config": {"batch_size": 16, "group_size": 8},
        "summary": {"uniform": summary, "bamdp": {**summary, "pass@1_after": 0.32}},
        "runs": [{"allocator": "uniform", "seed": 1, "pass@1_after": 0.31},
                 {"allocator": "uniform", "seed": 0, "pass@1_after": 0.29},
                 {"allocator": "bamdp", "seed": 0, "pass@1_after": 0.32}],
    }  # fmt: skip
    lines = _trl_table(report).splitlines()
    assert "gradient rollouts per step (of 128)" in lines[0]
    assert lines[2:] == [
        "| uniform (= TRL) | 25.0 % | 30.0 % (29.0, 31.0) | 0.200 → 0.350 | 0.500 | 64.0 | 0.0 % |",
        "| bamdp | 25.0 % | 32.0 % (32.0) | 0.200 → 0.350 | 0.500 | 64.0 | 0.0 % |",
    ]
