"""The results scripts that decide something: the default rule of
``results/attributed/tabulate_pooled.py`` and the joining of evidence folders by seed in
``results/attributed/final_main/tabulate_attribution.py``, on small run fixtures."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(relative: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(Path(relative).stem, ROOT / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pooled = _load("results/attributed/tabulate_pooled.py")
attribution = _load("results/attributed/final_main/tabulate_attribution.py")


def _run(folder: Path, entrant: str, seed: int, curve: list[float]) -> None:
    """One finished run: pass@1 ``curve`` at 0, 100, 200, ... rollouts."""
    d = folder / "runs" / entrant / f"seed{seed}"
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps({"minutes": 1.0, "stopped_by": "steps"}))
    evals = [{"step": i, "rollouts_total": 100 * i, "pass@1": a, "pass@8": min(1.0, 2 * a)}
             for i, a in enumerate(curve)]  # fmt: skip
    (d / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    (d / "metrics.jsonl").write_text(json.dumps({"step": 1, "step_seconds": 0.5}) + "\n")


def _final(folder: Path, curves: dict[str, list[list[float]]]) -> Path:
    """A final's evidence: ``curves[entrant][seed]`` is that run's pass@1 curve."""
    folder.mkdir(parents=True)
    seeds = {len(c) for c in curves.values()}
    assert len(seeds) == 1
    config = {"seeds": seeds.pop(), "resolved_entrants": [{"name": n} for n in curves]}
    (folder / "config.json").write_text(json.dumps(config))
    for name, per_seed in curves.items():
        for seed, curve in enumerate(per_seed):
            _run(folder, name, seed, curve)
    return folder


def _cell(prior_filter: list[float], bamdp: list[float]) -> dict[str, list[list[float]]]:
    """Three seeds: ``uniform`` climbs 0.30 → 0.40, the others by the final values given."""
    return {
        "uniform": [[0.30, 0.35, 0.40]] * 3,
        "prior_filter": [[0.30, 0.38, f] for f in prior_filter],
        "bamdp": [[0.30, 0.37, f] for f in bamdp],
    }


def test_the_default_rule_holds_only_when_every_condition_does(tmp_path: Path) -> None:
    main = _final(tmp_path / "main", _cell([0.42, 0.43, 0.41], [0.41, 0.41, 0.41]))
    spell = _final(tmp_path / "spell", _cell([0.42, 0.41, 0.42], [0.41, 0.41, 0.41]))
    assert pooled.complete(main) and pooled.complete(spell)
    checks, verdict = pooled.default_rule({"main": main, pooled.SPELL: spell})
    assert [ok for *_, ok in checks] == [True] * 4 and verdict is True
    # every value read is printed with its sign count
    assert checks[1][1].startswith("+1.8 ± ") and checks[1][1].endswith("| 6/0/0")

    # the spell cell alone: `bamdp` ahead there although `prior_filter` leads pooled
    spell_lost = _final(tmp_path / "spell2", _cell([0.42, 0.41, 0.42], [0.44, 0.44, 0.44]))
    main_far = _final(tmp_path / "main2", _cell([0.50, 0.50, 0.50], [0.41, 0.41, 0.41]))
    checks, verdict = pooled.default_rule({"main": main_far, pooled.SPELL: spell_lost})
    assert [ok for *_, ok in checks] == [True, True, True, False] and verdict is False

    # an AUC interval that reaches 0 fails (1) although the mean is positive
    noisy = _cell([0.41, 0.41, 0.41], [0.40, 0.40, 0.40])
    noisy["prior_filter"] = [[0.30, 0.45, 0.41], [0.30, 0.30, 0.41], [0.30, 0.31, 0.41]]
    spell_noisy = _final(tmp_path / "spell3", noisy)
    checks, verdict = pooled.default_rule({pooled.SPELL: spell_noisy})
    assert [ok for *_, ok in checks] == [False, True, True, True] and verdict is False


def test_no_verdict_before_the_spell_final_is_complete(tmp_path: Path) -> None:
    main = _final(tmp_path / "main", _cell([0.42, 0.43, 0.41], [0.41, 0.41, 0.41]))
    checks, verdict = pooled.default_rule({"main": main})
    assert verdict is None and checks[3][2] is False  # no spell pairs to read yet
    spell = _final(tmp_path / "spell", _cell([0.42, 0.41, 0.42], [0.41, 0.41, 0.41]))
    (spell / "runs" / "bamdp" / "seed2" / "summary.json").write_text(
        json.dumps({"steps": 7, "stopped_by": "SIGTERM"})
    )  # stopped, so the final is still running
    assert not pooled.complete(spell)
    assert not pooled.complete(tmp_path / "nowhere")


def test_main_lists_incomplete_finals_and_prints_the_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cells = {c: _cell([0.42, 0.43, 0.41], [0.41, 0.41, 0.41]) for c in ("a", "s")}
    for cells_curves in cells.values():
        cells_curves["knowledge_gradient"] = cells_curves["greso"] = cells_curves["bamdp"]
    finals = {
        "a": _final(tmp_path / "a", cells["a"]),
        pooled.SPELL: _final(tmp_path / "s", cells["s"]),
        "later": tmp_path / "later",
    }
    monkeypatch.setattr(pooled, "HERE", tmp_path)
    monkeypatch.setattr(pooled, "FINALS", finals)
    pooled.main()
    out = capsys.readouterr().out
    assert "- later: final not complete yet (`later/`)" in out
    assert "| `prior_filter` | 2 of 2 | 6 | +2.0 ± " in out
    assert "verdict: `prior_filter` with a pool of 2·B becomes the recommended default" in out


def test_attribution_joins_evidence_folders_by_seed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = tmp_path / "evidence"
    later = tmp_path / "more_seeds"
    for seed in (0, 1):
        _run(first, "uniform", seed, [0.3, 0.4])
        _run(first, "prior_filter", seed, [0.3, 0.5])
    for seed in (3, 2):
        _run(later, "uniform", seed, [0.3, 0.4])
        _run(later, "prior_filter", seed, [0.3, 0.35])
    joined = attribution.runs_of([first, later], "prior_filter")
    assert [r["seed"] for r in joined] == [0, 1, 2, 3]
    attribution.main([first, later])
    row = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("| the priors"))
    assert "| 4 | +2.5 ± " in row and "| 2/0/2 |" in row  # two +10, two −5 points
    with pytest.raises(SystemExit, match="seed 0 of uniform is in two evidence folders"):
        attribution.runs_of([first, first], "uniform")


def test_the_fixed_prior_filter_is_paired_with_the_finals_entrants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fix = _load("results/attributed/fixed_prior_filter.py")
    cell = tmp_path / "cell"
    _final(cell / "final", _cell([0.38, 0.38, 0.38], [0.39, 0.39, 0.39]))
    with pytest.raises(SystemExit, match="no finished run of the fixed prior_filter"):
        fix.main(cell)
    for seed, last in enumerate((0.42, 0.41, 0.43)):
        _run(cell / "prior_filter_fix" / "evidence", "prior_filter", seed, [0.30, 0.36, last])
    fix.main(cell)
    out = capsys.readouterr().out
    assert "| `prior_filter (fixed)` − `uniform` | 3 | +2.0 ± " in out
    assert "| `prior_filter (fixed)` − `prior_filter` | 3 | +4.0 ± " in out
    assert "| `prior_filter (fixed)` (3 seeds) | 42.0 |" in out  # mean final pass@1


def test_attribution_reads_an_entrant_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, later, fixed = tmp_path / "evidence", tmp_path / "more_seeds", tmp_path / "fix"
    for seed in (0, 1):
        _run(first, "uniform", seed, [0.3, 0.4])
        _run(first, "prior_filter", seed, [0.3, 0.2])  # the old runs, not to be read
        _run(fixed, "prior_filter", seed, [0.3, 0.45])
    for seed in (2, 3):
        _run(later, "uniform", seed, [0.3, 0.4])
        _run(later, "prior_filter", seed, [0.3, 0.45])
    args = [str(first), str(later), f"prior_filter={fixed}", f"prior_filter={later}"]
    evidence, apart = attribution.parse(args)
    assert evidence == [first, later] and apart == {"prior_filter": [fixed, later]}
    attribution.main(evidence, apart)
    row = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("| the priors"))
    assert "| 4 | +5.0 ± 0.0 | 4/0/0 |" in row


def test_the_second_look_reads_the_fixed_prior_filter_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    curves = _cell([0.38, 0.38, 0.38], [0.41, 0.41, 0.41])  # the old prior_filter: −2 points
    finals = {
        "a": _final(tmp_path / "a" / "final", curves),
        pooled.SPELL: _final(tmp_path / "s" / "final", curves),
    }
    for seed in range(3):  # the spell cell's rerun is complete (+3 points), cell a's is not
        _run(
            tmp_path / "s" / "prior_filter_fix" / "evidence", "prior_filter", seed, [0.3, 0.4, 0.43]
        )
    _run(tmp_path / "a" / "prior_filter_fix" / "evidence", "prior_filter", 0, [0.3, 0.4, 0.43])
    monkeypatch.setattr(pooled, "HERE", tmp_path)
    monkeypatch.setattr(pooled, "FINALS", finals)
    pooled.main(fixed=True)
    out = capsys.readouterr().out
    assert (
        "- a: the fixed `prior_filter` is not complete yet (`a/prior_filter_fix/evidence/`)" in out
    )
    assert f"| `prior_filter` | {pooled.SPELL} | 3 | +3.0 ± 0.0 | 3/0/0 |" in out
    assert "no verdict" in out and "verdict: `bamdp` stays" not in out
    assert pooled.FIXED is False  # the next reading is the rule's again
    pooled.main()
    out = capsys.readouterr().out
    assert f"| `prior_filter` | {pooled.SPELL} | 3 | -2.0 ± 0.0 | 0/0/3 |" in out
    assert "verdict: `bamdp` stays the recommended default" in out


def test_a_cells_reading_from_its_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``cell_reading.py``: curves, per-level differences paired by seed, Spearman over the
    entrants, allocation medians, from a final's evidence alone."""
    reading = _load("results/attributed/cell_reading.py")
    evidence = tmp_path / "c" / "final"
    alloc = {"uniform": 0.001, "a": 0.2, "b": 0.05}
    for seed, shift in enumerate((0.0, 0.02)):
        for name, end in (("uniform", 0.40), ("a", 0.44), ("b", 0.42)):
            d = evidence / "runs" / name / f"seed{seed}"
            d.mkdir(parents=True)
            (d / "summary.json").write_text(json.dumps({"stopped_by": "steps"}))
            evals = [
                {"step": s, "rollouts_total": 100 * s, "pass@1": a + shift, "pass@8": 0.9 - a,
                 "pass@1/level0": a + shift, "pass@1/level1": a + 2 * shift}
                for s, a in ((0, 0.30), (10, end))
            ]  # fmt: skip
            (d / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
            steps = [{"step": i, "step_seconds": 1.0, "alloc_seconds": alloc[name] * i,
                      "alloc_overhead": alloc[name] * i} for i in (1, 2, 3)]  # fmt: skip
            (d / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in steps))
    rows = [  # the ordering of a's, b's and uniform's Δ; the mechanism agrees, then reverses
        {"entrant": "uniform", "delta_auc": None, "delta_final": None, "delta_pass_k": None,
         "informative_prompts_per_step": 5.0, "gradient_rollouts_per_step": 90.0},
        {"entrant": "a", "delta_auc": 0.02, "delta_final": 0.04, "delta_pass_k": -0.04,
         "informative_prompts_per_step": 9.0, "gradient_rollouts_per_step": 10.0},
        {"entrant": "b", "delta_auc": 0.01, "delta_final": 0.02, "delta_pass_k": -0.02,
         "informative_prompts_per_step": 7.0, "gradient_rollouts_per_step": 50.0},
    ]  # fmt: skip
    summary = {"baseline": "uniform", "runs": {n: [0, 1] for n in alloc}, "rows": rows}
    (evidence / "summary.json").write_text(json.dumps(summary))
    monkeypatch.setattr(reading, "HERE", tmp_path)
    with pytest.raises(SystemExit, match="no tabulated final"):
        reading.evidence_of("missing")
    assert reading.evidence_of("c") == evidence
    _, runs = reading.load(evidence)
    assert reading.curves_table(runs)[2] == "| `uniform` | 31.0 | 41.0 | 60.0 → 50.0 |"
    levels = reading.levels_table(runs, "uniform")
    assert levels[2:4] == ["| `uniform` start (%) | 31.0 | 32.0 |",
                           "| `uniform` final (%) | 41.0 | 42.0 |"]  # fmt: skip
    assert levels[4] == "| `a` − `uniform` | +4.0 | +4.0 |"  # paired by seed
    spearman = reading.spearman_table(summary)
    assert spearman[2] == "| Δ AUC | +1.00 | -1.00 |"
    assert spearman[4] == "| Δ final pass@k | -1.00 | +1.00 |"
    allocation = reading.allocation_table(runs)
    assert allocation[3] == "| `a` | 0.4000-0.4000 | 40.0 % |"  # the median step of 1, 2, 3


def test_the_loss_control_is_read_at_the_same_step_under_both_losses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``drgrpo/tabulate_loss.py``: the ``dapo`` runs are cut at the ``dr_grpo`` runs' last
    evaluation (a later difference must not leak in), only the seeds run under ``dr_grpo`` are
    paired, the fixed ``prior_filter`` is read from its own folder, and a missing one is pending."""
    loss = _load("results/attributed/drgrpo/tabulate_loss.py")
    dr = _final(tmp_path / "dr", {
        "uniform-dr_grpo": [[0.30, 0.40, 0.40]] * 2,
        "prior_filter-dr_grpo": [[0.30, 0.42, 0.43]] * 2,
        "bamdp-dr_grpo": [[0.30, 0.38, 0.39]] * 2,
    })  # fmt: skip
    # under dapo bamdp is ahead at step 2 and behind only afterwards (step 3, cut away)
    dapo = _final(tmp_path / "dapo", {
        "uniform": [[0.30, 0.40, 0.40, 0.40]] * 3,
        "bamdp": [[0.30, 0.41, 0.42, 0.10]] * 3,
        "prior_filter": [[0.30, 0.10, 0.10, 0.10]] * 3,  # the old code's: never read
    })  # fmt: skip
    loss.main(dr, dapo, tmp_path / "missing")
    out = capsys.readouterr().out
    assert "seeds [0, 1], at step 2 " in out
    assert "| `bamdp` | `dapo` | 2 | +2.0 ± 0.0 | 2/0/0 |" in out
    assert "| `bamdp` | `dr_grpo` | 2 | -1.0 ± 0.0 | 0/0/2 |" in out
    assert "`bamdp`: the signs of Δ final and Δ AUC are not the same under both losses" in out
    assert "| `prior_filter` | `dapo` | 0 | pending: seeds [0, 1] not finished" in out
    fixed = _final(tmp_path / "fixed", {"prior_filter": [[0.30, 0.41, 0.44, 0.0]] * 2})
    loss.main(dr, dapo, fixed)
    out = capsys.readouterr().out
    assert "| `prior_filter` | `dapo` | 2 | +4.0 ± 0.0 | 2/0/0 |" in out
    assert "`prior_filter`: the signs of Δ final and Δ AUC are the same under both losses" in out
    run = {"max_grad_norm": 1.0, "metrics": [{"grad_norm": 2.0}, {"grad_norm": 0.5}, {}]}
    assert loss.clipped([run, {"max_grad_norm": None, "metrics": [{"grad_norm": 9.0}]}]) == "50 %"
    assert loss.clipped([{"max_grad_norm": None, "metrics": [{"grad_norm": 9.0}]}]) == "—"
    short = _final(tmp_path / "short", {"uniform": [[0.3, 0.4]] * 2, "bamdp": [[0.3, 0.4]] * 2})
    with pytest.raises(SystemExit, match="no evaluation at step 2"):
        loss.main(dr, short, fixed)


def _seeds(folder: Path, entrant: str, curves: dict[int, list[float]]) -> None:
    """Finished runs of ``entrant`` in ``folder`` for the given seeds (pass@1 curves)."""
    for seed, curve in curves.items():
        _run(folder, entrant, seed, curve)


def test_the_twelve_seed_reading_joins_its_folders_and_reads_the_target_once_complete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``final_main/tabulate_more_seeds.py``: ``uniform`` from the final and the more seeds, the
    fixed ``prior_filter`` from its rerun and the more seeds (never the final's buggy one); the
    confirmation reads seeds 4-11 alone; no verdict while a planned seed is missing."""
    more = _load("results/attributed/final_main/tabulate_more_seeds.py")
    ahead = {s: [0.30, 0.35, 0.40 + 0.01 * (1 + s % 3)] for s in range(12)}  # +1 to +3 points
    level = {s: [0.30, 0.35, 0.40] for s in range(12)}
    _seeds(tmp_path / "evidence", "uniform", {s: level[s] for s in range(4)})
    _seeds(tmp_path / "evidence", "prior_filter", {s: [0.3, 0.3, 0.0] for s in range(4)})  # buggy
    _seeds(tmp_path / "prior_filter_fix" / "evidence", "prior_filter",
           {s: ahead[s] for s in range(4)})  # fmt: skip
    _seeds(tmp_path / "more_seeds", "uniform", {s: level[s] for s in range(4, 12)})
    _seeds(tmp_path / "more_seeds", "prior_filter", {s: ahead[s] for s in range(4, 11)})
    more.main(tmp_path)
    out = capsys.readouterr().out
    assert "planned but not finished: [11]" in out
    assert "| all (0-11) | 11 | +1.9 ± " in out  # the buggy runs would make it negative
    assert "| confirmation (4-11) | 7 |" in out
    assert "Target: not read yet" in out
    _seeds(tmp_path / "more_seeds", "prior_filter", {11: ahead[11]})
    more.main(tmp_path)
    out = capsys.readouterr().out
    assert "| all (0-11) | 12 | +2.0 ± 0.5 | 12/0/0 |" in out
    assert "Target (the 95 % interval of Δ final pass@1 above 0): **met**" in out
    assert "reached on" not in out and "(12 of 12 seeds reached it)" in out
