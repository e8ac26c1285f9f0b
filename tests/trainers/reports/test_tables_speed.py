"""The speed page's blocks (``trainers.reports.tables_speed``) on tiny hand-made reports."""

from __future__ import annotations

import json
from typing import Any

from trainers.reports.tables_speed import env_speed, trl_overhead

PAGE = "speed"  # the page of the report_folder fixture's Output


def test_env_speed_turns_the_printed_rich_table_into_markdown(report_folder: Any) -> None:
    printed = (
        "      env steps per second (tiny)      \n"
        "┏━━━━━━━━┳━━━━┳━━━━━━┳━━━━━━━━━┓\n"
        "┃ env    ┃  B ┃ how  ┃ steps/s ┃\n"
        "┡━━━━━━━━╇━━━━╇━━━━━━╇━━━━━━━━━┩\n"
        "│ A-v0   │ 16 │ make │   9,000 │\n"
        "│ B-v0   │  4 │ vec  │     120 │\n"
        "└────────┴────┴──────┴─────────┘\n"
    )
    data, out = report_folder({"bench_env.txt": printed})
    assert env_speed.make(data, out) == (
        "| env | B | how | steps/s |\n|---|---:|---|---:|\n"
        "| `A-v0` | 16 | make | 9,000 |\n| `B-v0` | 4 | vec | 120 |\n\n"
        "From `bench_env.txt` (env steps per second (tiny))."
    )
    assert out.written == []


def _variant(base: float, alloc: float, own: float, rounds: float) -> dict[str, float]:
    return {
        "seconds_per_step": base, "gen_score_seconds": 0.25, "generate_seconds": 0.125,
        "reward_seconds": 0.01, "alloc_seconds": alloc, "own_seconds": own,
        "other_gen_score_seconds": 0.05, "train_seconds": 0.375, "rounds": rounds,
    }  # fmt: skip


def test_trl_overhead_rows_and_overhead_lines(report_folder: Any) -> None:
    report = {
        "config": {"blocks": 2, "steps": 8},
        "versions": {"trl": "1.0", "transformers": "5.0", "torch": "2.9"},
        "summary": {
            "trl": _variant(0.5, 0.0, 0.0, 1.0),
            "uniform": _variant(0.6, 0.001, 0.002, 1.0),
            "uniform_overhead": 0.2,
            "uniform_overhead_per_block": [0.1, 0.3],
            "uniform_own_share": 0.0025,
        },
    }
    data, out = report_folder({"bench_trl_overhead.json": json.dumps(report)})
    head = (
        "| variant | s/step | generate + score | of which generate | reward | allocator | "
        "subclass's own code | other | loss + update | rounds |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    assert trl_overhead.make(data, out) == (
        head + "| TRL `GRPOTrainer` | 0.5000 | 0.2500 | 0.1250 | 0.0100 | — | — | 0.0500 | 0.3750 "
        "| 1 |\n"
        "| subclass, `uniform` | 0.6000 | 0.2500 | 0.1250 | 0.0100 | 0.0010 | 0.0020 | 0.0500 "
        "| 0.3750 | 1 |\n\n"
        "Seconds per step, medians over 2 alternating blocks × 8 steps (TRL 1.0, transformers "
        "5.0, torch 2.9; `bench_trl_overhead.json`).\n\n"
        "- the subclass's own code with `uniform`, median share of a step: **0.25%**\n"
        "- step time, subclass with `uniform` against TRL (median of blocks): +20.0% "
        "(per block: +10.0%, +30.0%)"
    )
    # with bamdp's ratio and allocation share (the package's defaults)
    with_bamdp = json.loads(json.dumps(report))
    with_bamdp["summary"]["bamdp"] = dict(_variant(0.7, 0.007, 0.01, 2.0), alloc_share=0.0125)
    with_bamdp["summary"].update(bamdp_ratio=1.4, bamdp_ratio_per_block=[1.3, 1.5])
    (data.base / "bench_trl_overhead.json").write_text(json.dumps(with_bamdp))
    assert trl_overhead.make(data, out).endswith(
        "- step time, subclass with `bamdp` at its defaults (two rounds) against TRL (median of "
        "blocks): **1.400×** (per block: 1.300, 1.500)\n"
        "- `bamdp`'s allocation (priors and their refits included), median share of a step: "
        "**1.25%**"
    )
    # a report without the overhead summary (and without a variant) has the table only
    del report["summary"]["uniform_overhead"]  # type: ignore[attr-defined]
    del report["summary"]["uniform"]  # type: ignore[attr-defined]
    (data.base / "bench_trl_overhead.json").write_text(json.dumps(report))
    text = trl_overhead.make(data, out)
    assert "subclass, `uniform`" not in text and "median share" not in text
    assert text.endswith("torch 2.9; `bench_trl_overhead.json`).")
