"""adaroll compete --trainer trl: the errors that name the fix, a tiny TRL competition (uniform
and bamdp, tables, rollouts counted as generated, rerun, tabulation, one TRL version per
directory) and, with the cgrpo extra (TRL 1.14, ``make test-trl114``), C-GRPO as an entrant."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from trainers.experiments.compete import CompeteConfig, main, tabulate
from trainers.grpo import GRPOConfig


def tiny_grpo(model: Path, **kw: Any) -> GRPOConfig:
    """Shared settings of a competition of very short TRL runs on the tiny model."""
    base: dict[str, Any] = {"model": str(model), "steps": 4, "batch_size": 4, "group_size": 4,
                            "eval_every": 2, "eval_size": 8, "eval_k": 2, "task_size": 64,
                            "threads": 1, "save_every": 2, "tensorboard": False}  # fmt: skip
    return GRPOConfig(**{**base, **kw})


def test_settings_of_the_wrong_trainer_are_refused_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match=r"entrant 'cgrpo' is C-GRPO.*run the competition with "
                       r"--trainer trl .*\.venv-trl114"):  # fmt: skip
        CompeteConfig(allocators="uniform,cgrpo")
    with pytest.raises(
        ValueError, match=r"--lr-schedule 'cosine': TRL settings.*add --trainer trl"
    ):
        CompeteConfig(allocators="uniform", lr_schedule="cosine")
    entrants = tmp_path / "e.json"
    entrants.write_text(json.dumps([{"name": "u", "allocator": "uniform", "lr_schedule": "linear",
                                     "steps_per_generation": 2}]))  # fmt: skip
    with pytest.raises(ValueError, match=r"entrant 'u': lr_schedule, steps_per_generation: TRL "
                       "settings"):  # fmt: skip
        CompeteConfig(entrants=str(entrants))
    with pytest.raises(ValueError, match=r"entrant 'uniform': TRL runs cannot honour these "
                       r"settings: dynamic_sampling"):  # fmt: skip
        CompeteConfig(trainer="trl", allocators="uniform", grpo=GRPOConfig(dynamic_sampling=True))
    monkeypatch.setitem(sys.modules, "trl_cgrpo", None)  # as if trl-cgrpo were not installed
    with pytest.raises(ImportError) as exc:
        CompeteConfig(trainer="trl", allocators="uniform,cgrpo")
    assert 'pip install -e ".[cgrpo]"' in str(exc.value) and ".venv-trl114" in str(exc.value)
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "trl" else real(name, *a))  # fmt: skip
    with pytest.raises(ImportError, match=r'--trainer trl needs TRL: pip install -e ".\[trl\]"'):
        CompeteConfig(trainer="trl", allocators="uniform")


def test_the_help_explains_the_trl_options(capsys: pytest.CaptureFixture[str]) -> None:
    from trainers.cli import main as cli

    with pytest.raises(SystemExit):
        cli(["compete", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for flag in ("--trainer {adaroll,trl}", "--lr-schedule {constant,linear,cosine}",
                 "--steps-per-generation", "--calibration-size", "--num-iterations", "--beta",
                 "--micro-batch-size"):  # fmt: skip
        assert flag in text, flag
    assert (
        "plain trl.GRPOTrainer bit for bit" in text and "one competition directory per TRL" in text
    )


def test_a_tiny_trl_competition(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trl = pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")
    import trainers.experiments.trl_run as trl_run
    import trainers.models.loading as loading

    # every completion the model generates outside the evaluations, run by run
    counted: dict[str, int] = {}
    current = {"run": "", "evaluating": False}
    real_load, real_evaluate, real_main = loading.load_policy, trl_run.evaluate, trl_run.main

    def load_counting(name: str, **kw: Any) -> Any:
        model, tokenizer = real_load(name, **kw)
        inner = model.generate

        def generate(*args: Any, **kwargs: Any) -> Any:
            out = inner(*args, **kwargs)
            if not current["evaluating"]:
                rows = out.shape[0] if hasattr(out, "shape") else out.sequences.shape[0]
                counted[current["run"]] = counted.get(current["run"], 0) + int(rows)
            return out

        model.generate = generate
        return model, tokenizer

    def evaluating(*args: Any, **kwargs: Any) -> Any:
        current["evaluating"] = True
        try:
            return real_evaluate(*args, **kwargs)
        finally:
            current["evaluating"] = False

    def run(cfg: Any) -> Any:
        current["run"] = cfg.out
        return real_main(cfg)

    monkeypatch.setattr(loading, "load_policy", load_counting)
    monkeypatch.setattr(trl_run, "evaluate", evaluating)
    monkeypatch.setattr(trl_run, "main", run)
    out = tmp_path / "c"
    cfg = CompeteConfig(trainer="trl", allocators="uniform,bamdp", seeds=2, workers=1,
                        out=str(out), progress=False, calibration_size=8,
                        grpo=tiny_grpo(tiny_model_dir))  # fmt: skip
    summary = main(cfg)
    rows = {r["entrant"]: r for r in summary["rows"]}
    assert set(rows) == {"uniform", "bamdp"} and all(r["seeds"] == 2 for r in rows.values())
    for name in ("table.md", "results.csv", "accuracy.png", "informative.png", "summary.json",
                 "calibration.png"):  # fmt: skip
        assert (out / name).exists(), name
    for name in ("uniform", "bamdp"):
        assert rows[name]["rollouts_per_step"] == 16.0 and rows[name]["rollouts"] == 4 * 16
        for seed in (0, 1):
            d = cfg.run_dir(name, seed)
            evals = [json.loads(line) for line in (d / "eval.jsonl").read_text().splitlines()]
            steps = [json.loads(line) for line in (d / "metrics.jsonl").read_text().splitlines()]
            # rollouts_total: what the model generated in training, step by step
            assert counted[str(d)] == evals[-1]["rollouts_total"] == 64
            assert [e["step"] for e in evals] == [0, 2, 4]
            assert [e["rollouts_total"] for e in evals] == [
                sum(s["rollouts"] for s in steps if s["step"] <= e["step"]) for e in evals
            ]
            assert {"loss", "grad_norm", "gradient_rollouts", "informative_prompts",
                    "update_norm", "alloc_overhead"} <= set(steps[0])  # fmt: skip
            assert (d / "steps.csv").exists() and (d / "DONE").exists()
    table = (out / "table.md").read_text()
    assert f"trainer `trl {trl.__version__}`" in table.splitlines()[0]
    assert "| uniform | " in table and "| bamdp | 2 |" in table
    assert summary["provenance"]["runs"]["trainer"] == [f"trl {trl.__version__}"]
    # a rerun finds every run done and only re-tabulates
    stamp = (cfg.run_dir("bamdp", 1) / "summary.json").stat().st_mtime
    main(cfg)
    assert (cfg.run_dir("bamdp", 1) / "summary.json").stat().st_mtime == stamp
    # tabulated from its record, the TRL settings included
    recorded = CompeteConfig(tabulate=str(out))
    assert recorded.trainer == "trl" and recorded.calibration_size == 8
    assert tabulate(recorded)["rows"][1]["final_pass@1"] == rows["bamdp"]["final_pass@1"]
    # a run of another TRL version: refused in the table and by a rerun, allowed when mixed
    prov = cfg.run_dir("bamdp", 1) / "provenance.json"
    record = json.loads(prov.read_text())
    record["starts"][0]["trainer"] = "trl 0.0.1"
    prov.write_text(json.dumps(record))
    with pytest.raises(ValueError, match=r"trained by different trainers \(.*'trl 0.0.1': bamdp "
                       r"seed 1\).*--allow-mixed"):  # fmt: skip
        tabulate(recorded)
    mixed = tabulate(CompeteConfig(tabulate=str(out), allow_mixed=True))
    assert sorted(mixed["provenance"]["runs"]["trainer"]) == sorted(
        ["trl 0.0.1", f"trl {trl.__version__}"]
    )
    with pytest.raises(ValueError, match=r"give this version its own competition directory"):
        main(cfg)


def test_cgrpo_competes_beside_plain_trl_of_its_version(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    pytest.importorskip("trl_cgrpo", reason="needs the cgrpo extra (TRL 1.14): make test-trl114")
    import trl

    out = tmp_path / "c"
    cfg = CompeteConfig(trainer="trl", allocators="uniform,cgrpo", seeds=1, workers=1,
                        out=str(out), progress=False, calibration_size=8,
                        grpo=tiny_grpo(tiny_model_dir))  # fmt: skip
    summary = main(cfg)
    rows = {r["entrant"]: r for r in summary["rows"]}
    assert set(rows) == {"uniform", "cgrpo"} and rows["uniform"]["rollouts_per_step"] == 16.0
    cgrpo = json.loads((cfg.run_dir("cgrpo", 0) / "summary.json").read_text())
    # its rollouts: one calibration of 8 prompts x 32, then between 2 and 32 per prompt a step
    assert cgrpo["calibration_rollouts"] == 256
    assert 256 + 4 * 4 * 2 <= cgrpo["rollouts_total"] <= 256 + 4 * 4 * 32
    assert rows["cgrpo"]["rollouts_per_step"] == pytest.approx(cgrpo["rollouts_total"] / 4)
    assert summary["provenance"]["runs"]["trainer"] == [f"trl {trl.__version__}"]
    assert "| cgrpo | 1 |" in (out / "table.md").read_text()
