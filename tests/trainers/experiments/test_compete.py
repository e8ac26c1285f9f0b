"""adaroll compete: entrants, runs, resumption, paired statistics, tables and plots.

Long for a test module because the competition's pieces are checked where they meet: entrants
files against the runs they configure, and the paired tables against run directories written by
hand with numbers worked out in the comments.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainers.experiments.compete import CompeteConfig, main, tabulate
from trainers.grpo import GRPOConfig

ROOT = Path(__file__).resolve().parents[3]
#: Student's t quantile 0.975 with 2 degrees of freedom (three seeds)
T2 = 4.302652729749462


def tiny_grpo(model: Path, **kw: Any) -> GRPOConfig:
    """Shared settings of a competition of very short runs on the tiny model."""
    base: dict[str, Any] = {"model": str(model), "steps": 2, "batch_size": 4, "group_size": 4,
                            "eval_every": 1, "eval_size": 8, "eval_k": 2, "threads": 1}  # fmt: skip
    return GRPOConfig(**{**base, **kw})


def write_entrants(path: Path, entrants: list[dict[str, Any]]) -> str:
    """An entrants file: YAML for ``.yaml``, JSON otherwise."""
    text = yaml.safe_dump(entrants) if path.suffix == ".yaml" else json.dumps(entrants)
    path.write_text(text)
    return str(path)


def test_config_errors() -> None:
    with pytest.raises(ValueError, match="allocators is empty"):
        CompeteConfig(allocators=" , ")
    with pytest.raises(ValueError, match="duplicates"):
        CompeteConfig(allocators="uniform,uniform")
    with pytest.raises(ValueError, match="seeds must be an integer >= 1"):
        CompeteConfig(seeds=0)
    with pytest.raises(
        ValueError, match=r"unknown baseline entrant 'unifrom'\. Did you mean 'uniform'"
    ):
        CompeteConfig(allocators="uniform,thompson", baseline="unifrom")
    assert CompeteConfig().names() == ["uniform", "bamdp", "thompson", "sb3:pretrained"]


def test_entrants_errors(tmp_path: Path) -> None:
    ok = [{"name": "u", "allocator": "uniform"}]
    f = write_entrants(tmp_path / "e.yaml", ok)
    with pytest.raises(ValueError, match=r"--entrants .* and --allocators \(uniform\) both given"):
        CompeteConfig(entrants=f, allocators="uniform")
    with pytest.raises(ValueError, match="allocator_kwargs in the entrants file"):
        CompeteConfig(entrants=f, allocator_kwargs='{"uniform": {}}')
    typo = [*ok, {"name": "b", "allocator": "bamdp", "utilty": "snr(8)"}]
    with pytest.raises(ValueError) as exc:
        CompeteConfig(entrants=write_entrants(tmp_path / "typo.yaml", typo))
    msg = str(exc.value)
    assert "entrant 2 ('b') has unknown key 'utilty'. Did you mean 'utility'?" in msg
    assert "Allowed keys: name, allocator, allocator_kwargs, utility, belief_prior" in msg
    twice = [*ok, {"name": "u", "allocator": "thompson"}]
    with pytest.raises(ValueError, match="two entrants are named 'u'"):
        CompeteConfig(entrants=write_entrants(tmp_path / "twice.json", twice))
    clash = [{"name": "a:b", "allocator": "uniform"}, {"name": "a_b", "allocator": "uniform"}]
    with pytest.raises(ValueError, match="share the run directory runs/a_b"):
        CompeteConfig(entrants=write_entrants(tmp_path / "clash.json", clash))
    for bad, match in [
        ([{"allocator": "uniform"}], "entrant 1 needs a 'name'"),
        ([{"name": "x"}], r"entrant 1 \('x'\) needs an 'allocator'"),
        ([{"name": "x", "allocator": "unifrom"}], "entrant 'x': .*Did you mean 'uniform'"),
        # each entrant's full GRPOConfig is checked: a group prior needs a fitted prior
        ([{"name": "x", "allocator": "uniform", "belief_group": "level", "belief_prior": "fixed"}],
         "entrant 'x': belief_group 'level' .* needs --belief-prior fitted"),
        ([{"name": "x", "allocator": "thompson", "allocator_kwargs": {"horizon": 2}}],
         "entrant 'x': .*max_horizon"),
        ([{"name": "x", "allocator": "uniform", "rounds": 1.5}], "rounds must be an integer"),
        ({"name": "x"}, "must hold a non-empty list"),
        ([], "must hold a non-empty list"),
    ]:  # fmt: skip
        with pytest.raises(ValueError, match=match):
            CompeteConfig(entrants=write_entrants(tmp_path / "bad.json", bad))  # type: ignore[arg-type]
    (tmp_path / "e.toml").write_text("")
    with pytest.raises(ValueError, match=r"must end in .yaml, .yml or .json"):
        CompeteConfig(entrants=str(tmp_path / "e.toml"))
    with pytest.raises(FileNotFoundError, match=r"entrants file .* does not exist"):
        CompeteConfig(entrants=str(tmp_path / "missing.yaml"))


def test_the_example_entrants_file(tmp_path: Path) -> None:
    import agents

    cfg = CompeteConfig(entrants=str(ROOT / "docs" / "compete" / "entrants.yaml"))
    assert cfg.names() == ["uniform", "bamdp-snr", "bamdp-snr-2rounds", "knapsack", "vip",
                           "reinforce_ada"]  # fmt: skip
    assert set(cfg.allocator_list()) <= set(agents.list_allocators())
    two = cfg.run_config("bamdp-snr-2rounds", 3)
    assert (two.allocator, two.utility, two.belief_prior, two.belief_group, two.rounds) == (
        "bamdp", "snr(8)", "fitted", "level", 2)  # fmt: skip
    assert cfg.run_config("bamdp-snr", 0).rounds is None
    assert two.steps == cfg.grpo.steps and two.seed == 3  # shared settings, the run's seed
    assert two.out.endswith("runs/bamdp-snr-2rounds/seed3")
    # the docs' competition page shows the same entrants
    page = (ROOT / "docs" / "site" / "compete.md").read_text()
    shown = re.search(r"docs/compete/entrants.yaml`:\n\n```yaml\n(.*?)```", page, flags=re.S)
    assert shown is not None
    example = (ROOT / "docs" / "compete" / "entrants.yaml").read_text()
    assert yaml.safe_load(shown.group(1)) == yaml.safe_load(example)


def test_the_command_line_refuses_entrants_with_allocators(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainers.cli import main as cli

    f = write_entrants(tmp_path / "e.yaml", [{"name": "u", "allocator": "uniform"}])
    with pytest.raises(SystemExit) as exc:
        cli(["compete", "--entrants", f, "--allocators", "uniform", "--out", str(tmp_path / "c")])
    assert exc.value.code == 2 and "both given" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


@pytest.mark.slow
def test_a_small_competition(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = CompeteConfig(
        allocators="uniform,bamdp",
        seeds=2,
        workers=1,
        out=str(tmp_path / "c"),
        progress=False,
        grpo=tiny_grpo(tiny_model_dir),
    )
    summary = main(cfg)
    rows = {r["allocator"]: r for r in summary["rows"]}
    assert set(rows) == {"uniform", "bamdp"} and all(r["seeds"] == 2 for r in rows.values())
    assert all(r["pass_k"] == 2 for r in rows.values())  # eval_k 2: pass@2 beside pass@1
    assert rows["uniform"]["rollouts"] == 2 * 16  # equal budgets
    assert rows["bamdp"]["rollouts"] == 2 * 16
    out = tmp_path / "c"
    for name in ("table.md", "results.csv", "accuracy.png", "informative.png", "summary.json"):
        assert (out / name).exists(), name
    assert (out / "calibration.png").exists() and summary["calibration"]["prompts"] > 0

    # the same seed gives both allocators the same prompts; another seed, other prompts
    def seen(a: str, s: int) -> list[int]:
        return sorted(json.loads((cfg.run_dir(a, s) / "beliefs.json").read_text())["ids"])

    # (the store records a prompt once it got a rollout: bamdp may give some none)
    assert seen("bamdp", 0) and set(seen("bamdp", 0)) <= set(seen("uniform", 0))
    assert seen("uniform", 0) != seen("uniform", 1)
    # a rerun finds every run finished and only re-tabulates
    stamp = (cfg.run_dir("bamdp", 1) / "summary.json").stat().st_mtime
    main(cfg)
    assert (cfg.run_dir("bamdp", 1) / "summary.json").stat().st_mtime == stamp
    # each start is recorded (from Python: an equivalent command line)
    starts = (out / "command.txt").read_text().splitlines()
    assert len(starts) == 2 and all(
        "(called from Python) adaroll compete --allocators uniform,bamdp --seeds 2 --workers 1 "
        in line
        for line in starts
    )
    # the evidence: the small files alone regenerate the same tables
    from trainers.experiments.compete import tabulate_recorded

    original = _body(out / "table.md")
    dest = tmp_path / "evidence"
    tabulate_recorded(CompeteConfig(tabulate=str(out), evidence=str(dest)))
    assert _body(out / "table.md") == original
    copy = _body(dest / "table.md")
    assert copy[:-2] == original and copy[-1].startswith("No calibration plot")
    assert (dest / "command.txt").read_text() == (out / "command.txt").read_text()
    kept = {p.name for p in dest.rglob("*") if p.is_file()}
    assert not kept & {"metrics.jsonl", "beliefs.json", "run.log", "DONE", "task.json"}
    assert not list(dest.rglob("checkpoints")) and not list(dest.rglob("tb"))
    for seed in (0, 1):
        run = dest / "runs" / "bamdp" / f"seed{seed}"
        kept_files = sorted(p.name for p in run.iterdir())
        assert kept_files == ["config.json", "eval.jsonl", "provenance.json", "steps.csv",
                              "summary.json"]  # fmt: skip
    summary = json.loads((dest / "summary.json").read_text())
    assert summary["runs"] == {"uniform": [0, 1], "bamdp": [0, 1]}


@pytest.mark.slow
def test_a_signal_stops_the_workers_each_run_resumable(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """SIGTERM to the competition alone reaches its workers: each running run saves, the
    competition exits 143, and each run resumes from its checkpoint."""
    import signal
    import subprocess
    import sys
    import time

    from trainers.run.grpo_command import checkpoint_dirs, read_jsonl
    from trainers.run.grpo_command import main as run_main

    out = tmp_path / "c"
    args = ["compete", "--allocators", "uniform,bamdp", "--seeds", "1", "--workers", "2",
            "--model", str(tiny_model_dir), "--steps", "100000", "--batch-size", "4",
            "--group-size", "2", "--eval-every", "100000", "--eval-size", "4", "--eval-k", "1",
            "--no-progress", "--out", str(out)]  # fmt: skip
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.Popen([sys.executable, "-m", "trainers.cli", *args], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    grpo = GRPOConfig(model=str(tiny_model_dir), steps=100000, batch_size=4, group_size=2,
                      eval_every=100000, eval_size=4, eval_k=1)  # fmt: skip
    cfg = CompeteConfig(allocators="uniform,bamdp", seeds=1, workers=2, out=str(out), grpo=grpo)
    dirs = [cfg.run_dir(a, 0) for a in ("uniform", "bamdp")]
    deadline = time.monotonic() + 900
    while not all(len(read_jsonl(d / "metrics.jsonl")) >= 2 for d in dirs):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 143, stderr[-3000:]
    assert "rerun the same command" in stdout and "Traceback" not in stderr
    assert f"adaroll compete --resume {out}" in stdout
    for d, spec in zip(dirs, ("uniform", "bamdp"), strict=True):
        steps = len(read_jsonl(d / "metrics.jsonl"))
        assert checkpoint_dirs(d)[-1].name == f"step-{steps:06d}"
        assert json.loads((d / "summary.json").read_text())["stopped_by"] == "SIGTERM"
        run = cfg.run_config(spec, 0)
        run_main(dataclasses.replace(run, steps=steps + 1, eval_every=0))
        assert [r["step"] for r in read_jsonl(d / "metrics.jsonl")] == list(range(1, steps + 2))


def test_a_missing_model_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainers.cli import main as cli

    out = tmp_path / "c"
    with pytest.raises(SystemExit) as exc:
        cli(["compete", "--allocators", "uniform", "--model", str(tmp_path / "nope"),
             "--out", str(out)])  # fmt: skip
    assert exc.value.code == 2 and "nope" in capsys.readouterr().err
    assert not out.exists()


def test_entrants_take_a_round_schedule(tiny_model_dir: Path, tmp_path: Path) -> None:
    from trainers.grpo.trainer import GRPOTrainer

    entrants = [
        {"name": "u", "allocator": "uniform"},
        {"name": "b-12+4", "allocator": "bamdp", "round_schedule": "12,4"},
        {"name": "b-list", "allocator": "bamdp", "round_schedule": [8, 8]},
    ]
    f = write_entrants(tmp_path / "e.yaml", entrants)
    # the shared --rounds 2 holds for u; an entrant's own schedule replaces it
    cfg = CompeteConfig(entrants=f, grpo=tiny_grpo(tiny_model_dir, rounds=2))
    one = cfg.run_config("b-12+4", 0)
    assert (one.round_schedule, one.rounds, one.round_size) == ("12,4", None, None)
    assert cfg.run_config("b-list", 0).round_schedule == "8,8"
    assert cfg.run_config("u", 0).rounds == 2
    r = GRPOTrainer(dataclasses.replace(one, task_size=200)).train_step()
    assert r.rounds == 2 and r.rollouts == 16
    bad = [{"name": "x", "allocator": "bamdp", "round_schedule": "12,5"}]
    with pytest.raises(ValueError, match=r"entrant 'x': .*hands out 17 rollouts"):
        CompeteConfig(entrants=write_entrants(tmp_path / "bad.json", bad),
                      grpo=tiny_grpo(tiny_model_dir))  # fmt: skip


# --- entrants in real runs --------------------------------------------------------------------
@pytest.mark.slow
def test_entrants_run_with_their_own_settings(tiny_model_dir: Path, tmp_path: Path) -> None:
    from trainers.cli import main as cli
    from trainers.models.loading import weights_sha256
    from trainers.run.grpo_command import read_jsonl

    entrants = [
        {"name": "ts", "allocator": "thompson", "allocator_kwargs": {"max_horizon": 3}},
        {"name": "ts-fitted", "allocator": "thompson", "belief_prior": "fitted",
         "belief_decay": 0.5, "rounds": 2, "utility": "grpo_signal"},
    ]  # fmt: skip
    f = write_entrants(tmp_path / "entrants.yaml", entrants)
    out = tmp_path / "c"
    args = ["compete", "--entrants", f, "--baseline", "ts", "--seeds", "2", "--workers", "1",
            "--model", str(tiny_model_dir), "--steps", "2", "--batch-size", "4",
            "--group-size", "4", "--eval-every", "1", "--eval-size", "8", "--eval-k", "2",
            "--threads", "1", "--no-progress", "--out", str(out)]  # fmt: skip
    assert cli(args) == 0
    cfg = CompeteConfig(entrants=f, baseline="ts", seeds=2, workers=1, out=str(out),
                        grpo=tiny_grpo(tiny_model_dir))  # fmt: skip
    for seed in (0, 1):
        ts = json.loads((cfg.run_dir("ts", seed) / "config.json").read_text())
        fitted = json.loads((cfg.run_dir("ts-fitted", seed) / "config.json").read_text())
        assert ts["allocator_kwargs"] == '{"max_horizon": 3}' and ts["rounds"] is None
        assert (ts["belief_prior"], ts["belief_decay"], ts["utility"]) == (
            "fitted", 0.95, "snr(8)")  # the defaults  # fmt: skip
        assert (fitted["belief_prior"], fitted["belief_decay"], fitted["utility"]) == (
            "fitted", 0.5, "grpo_signal")  # fmt: skip
        assert fitted["rounds"] == 2 and fitted["allocator_kwargs"] is None
        assert ts["seed"] == fitted["seed"] == seed and ts["steps"] == fitted["steps"] == 2
        # two rounds a step, and evaluations carry training seconds
        assert [m["rounds"] for m in read_jsonl(cfg.run_dir("ts-fitted", seed) / "metrics.jsonl")
                ] == [2, 2]  # fmt: skip
        secs = [e["seconds"] for e in read_jsonl(cfg.run_dir("ts", seed) / "eval.jsonl")]
        assert secs[0] == 0.0 and secs[0] < secs[1] < secs[2]
    recorded = json.loads((out / "config.json").read_text())
    assert [e["name"] for e in recorded["resolved_entrants"]] == ["ts", "ts-fitted"]
    assert recorded["resolved_entrants"][1]["settings"]["rounds"] == 2
    summary = json.loads((out / "summary.json").read_text())
    assert summary["baseline"] == "ts" and set(summary["paired"]) == {"ts-fitted"}
    assert summary["paired"]["ts-fitted"]["seeds"] == [0, 1]
    digest = weights_sha256(tiny_model_dir)
    assert digest and summary["provenance"]["weights_sha256"] == digest
    table = (out / "table.md").read_text()
    first = table.splitlines()[0]
    assert f"weights sha256 `{digest}`" in first and "command: `adaroll compete --entrants" in first
    assert "**Paired against ts**" in table and "| ts-fitted | 2 |" in table
    # an entrant whose settings changed is refused, not silently taken from the old runs
    entrants[1]["belief_decay"] = 0.9
    write_entrants(tmp_path / "entrants.yaml", entrants)
    with pytest.raises(ValueError, match=r"seed0 ran with other settings \(belief_decay: 0.5"):
        main(dataclasses.replace(cfg))


@pytest.mark.slow
def test_literature_entrants_complete_a_competition(tiny_model_dir: Path, tmp_path: Path) -> None:
    names = ["knapsack", "vip", "reinforce_ada"]
    f = write_entrants(tmp_path / "e.json", [{"name": n, "allocator": n} for n in names])
    cfg = CompeteConfig(entrants=f, seeds=1, workers=1, out=str(tmp_path / "c"), progress=False,
                        grpo=tiny_grpo(tiny_model_dir))  # fmt: skip
    summary = main(cfg)
    rows = {r["entrant"]: r for r in summary["rows"]}
    assert set(rows) == set(names) and summary["baseline"] == "knapsack"  # no uniform: the first
    for n in names:
        run = json.loads((cfg.run_dir(n, 0) / "summary.json").read_text())
        assert run["allocator"] == n and run["steps"] == 2 and run["rollouts_total"] == 2 * 16
        assert math.isfinite(rows[n]["final_pass@1"]) and rows[n]["gradient_rollouts_per_step"] >= 0


# --- paired statistics on runs written by hand ------------------------------------------------
#: held-out pass@1 at rollouts 0, 100, 200 (evaluations at steps 0, 2, 4; 50 rollouts a step)
BASE = {0: [0.25, 0.375, 0.5], 1: [0.25, 0.5, 0.625], 2: [0.125, 0.25, 0.375]}
FAST = {0: [0.25, 0.625, 0.625], 1: [0.25, 0.375, 0.75], 2: [0.125, 0.375, 0.375]}
#: held-out pass@4 at the same evaluations
BASE4 = {0: [0.5, 0.625, 0.75], 1: [0.5, 0.625, 0.75], 2: [0.25, 0.375, 0.5]}
FAST4 = {0: [0.5, 0.75, 0.75], 1: [0.5, 0.625, 0.875], 2: [0.25, 0.5, 0.5]}


def write_run(d: Path, curve: list[float], metrics: list[dict[str, Any]], seconds: bool,
              curve4: list[float] | None = None) -> None:  # fmt: skip
    """A finished run directory: summary, evaluations (with ``seconds`` or, as runs written
    before it, without; with pass@4 when ``curve4`` is given) and per-step metrics."""
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps({"steps": 4, "minutes": 1.5, "rollouts_total": 200}))
    per_step = [m["step_seconds"] for m in metrics]
    evals = []
    for i, y in enumerate(curve):
        rec = {"step": 2 * i, "rollouts_total": 100 * i, "pass@1": y, "pass@1/level0": y / 2}
        if curve4 is not None:
            rec["pass@4"] = curve4[i]
        if seconds:
            rec["seconds"] = sum(per_step[: 2 * i])
        evals.append(rec)
    (d / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    (d / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))


def step_metrics(
    trained: list[int],
    overhead: list[float],
    secs: list[float],
    rounds: int,
    norms: tuple[list[float], list[float]] | None = None,
) -> list[dict[str, Any]]:
    """``metrics.jsonl`` records of four steps (informative prompts: a fifth of ``trained``;
    ``norms``: grad_norm and update_norm per step, absent as in runs written before them), with
    keys the tables never read (``loss``, a utility) as real records have."""
    grad, update = norms if norms is not None else (None, None)
    out = []
    for i, (t, o, s) in enumerate(zip(trained, overhead, secs, strict=True)):
        rec = {"step": i + 1, "rollouts": 50, "rollouts_total": 50 * (i + 1),
               "gradient_rollouts": t, "informative_prompts": t // 5, "informative_frac": t / 100,
               "rounds": rounds,
               "step_seconds": s, "alloc_seconds": o * s, "alloc_overhead": o,
               "loss": 0.1234567891, "utility/snr(8)": 3.0}  # fmt: skip
        if grad is not None and update is not None:
            rec.update(grad_norm=grad[i], update_norm=update[i])
        out.append(rec)
    return out


def known_competition(tmp_path: Path, **kw: Any) -> CompeteConfig:
    """``uniform`` against ``fast`` (thompson) on three seeds, the runs written by hand (the
    numbers of ``test_paired_statistics_on_known_runs``), with the competition's config.json
    as ``main`` writes it."""
    model = tmp_path / "model"  # a stand-in warm start: only its weight files are read
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "a.safetensors").write_bytes(b"first")
    (model / "b.bin").write_bytes(b"second")
    (model / "notes.txt").write_text("not weights")
    pair = [{"name": "uniform", "allocator": "uniform"}, {"name": "fast", "allocator": "thompson"}]
    f = write_entrants(tmp_path / "e.yaml", pair)
    cfg = CompeteConfig(entrants=f, seeds=3, out=str(tmp_path / "c"),
                        grpo=GRPOConfig(model=str(model), eval_k=4), **kw)  # fmt: skip
    for seed in range(3):
        # uniform: 10 s a step, recorded on its evaluations (0, 20, 40 s); no norms recorded
        write_run(
            cfg.run_dir("uniform", seed),
            BASE[seed],
            step_metrics([20, 20, 20, 20], [0.01] * 4, [10.0] * 4, 1),
            seconds=True,
            curve4=BASE4[seed],
        )
        # fast: 5, 5, 15, 15 s, its evaluations without seconds: estimated as 0, 10, 40 s;
        # update norm measured on every other step (NaN on the others)
        norms = ([1.0, 2.0, 3.0, 4.0], [0.1, math.nan, 0.3, math.nan])
        steps = step_metrics([10, 20, 30, 40], [0.01, 0.02, 0.03, 0.5], [5.0, 5.0, 15.0, 15.0], 2,
                             norms)  # fmt: skip
        write_run(cfg.run_dir("fast", seed), FAST[seed], steps, seconds=False, curve4=FAST4[seed])
    (tmp_path / "c" / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=2))
    return cfg


def test_paired_statistics_on_known_runs(tmp_path: Path) -> None:
    cfg = known_competition(tmp_path)
    model = tmp_path / "model"
    summary = tabulate(cfg)
    assert summary["baseline"] == "uniform"
    p = summary["paired"]["fast"]
    # Δ final: 0.625 − 0.5, 0.75 − 0.625, 0.375 − 0.375; mean 1/12, standard error 1/24
    assert p["delta_final"] == [0.125, 0.125, 0.0] and p["wins"] == 2
    assert p["delta_final_mean"] == pytest.approx(1 / 12)
    assert p["delta_final_ci95"] == pytest.approx(T2 / 24)
    assert p["signs_final"] == [2, 1, 0]  # wins, ties, losses
    # Δ final pass@4: 0, 0.125, 0; mean 1/24, the same standard error 1/24
    assert p["pass_k"] == 4 and p["delta_pass_k"] == [0.0, 0.125, 0.0]
    assert p["delta_pass_k_mean"] == pytest.approx(1 / 24)
    assert p["delta_pass_k_ci95"] == pytest.approx(T2 / 24)
    assert p["signs_pass_k"] == [1, 2, 0]
    # AUC with evaluations 100 rollouts apart: (y0 + 2·y1 + y2) / 4
    # uniform 0.375, 0.46875, 0.25; fast 0.53125, 0.4375, 0.3125
    assert p["delta_auc"] == [0.15625, -0.03125, 0.0625]
    assert p["delta_auc_mean"] == pytest.approx(0.0625)
    assert p["delta_auc_ci95"] == pytest.approx(T2 * math.sqrt(2 * 0.09375**2 / 2 / 3))
    assert p["signs_auc"] == [2, 0, 1]
    # to uniform's final of the same seed: uniform gets there at 200 rollouts (40 s) each seed;
    # fast at 66.7, 166.7, 100 rollouts (6.7, 30, 10 s by its estimated seconds)
    assert p["base_rollouts_to_final"] == [200.0, 200.0, 200.0]
    assert p["rollouts_to_base_final"] == pytest.approx([200 / 3, 500 / 3, 100.0])
    assert p["rollouts_ratio"] == pytest.approx(5 / 9)
    assert p["base_seconds_to_final"] == [40.0, 40.0, 40.0]
    assert p["seconds_to_base_final"] == pytest.approx([20 / 3, 30.0, 10.0])
    assert p["seconds_ratio"] == pytest.approx(7 / 18)
    # the bootstrap over seeds: each of the 27 equally likely resamples has probability 1/27 >
    # 2.5 %, so the interval runs from the resample of the fastest seed thrice (200/3 rollouts,
    # 20/3 s) to that of the slowest thrice (500/3, 30 s), over uniform's 200 and 40
    assert p["rollouts_ratio_ci95"] == pytest.approx((1 / 3, 5 / 6))
    assert p["seconds_ratio_ci95"] == pytest.approx((1 / 6, 3 / 4))
    assert p["step_seconds_ratio"] == 1.0  # 10 s a step on average, as uniform
    rows = {r["entrant"]: r for r in summary["rows"]}
    fast, uniform = rows["fast"], rows["uniform"]
    assert fast["auc_pass@1"] == pytest.approx((0.53125 + 0.4375 + 0.3125) / 3)
    # mechanism: means over seeds and steps, the overhead's median
    assert (fast["gradient_rollouts_per_step"], fast["informative_prompts_per_step"]) == (25.0, 5.0)
    assert fast["informative_frac"] == pytest.approx(0.25) and fast["rounds_per_step"] == 2.0
    assert fast["seconds_per_step"] == 10.0 and fast["alloc_overhead"] == pytest.approx(0.025)
    # gradient norm over all steps; update norm over the steps that measured it (0.1, 0.3)
    assert fast["grad_norm_per_step"] == 2.5 and fast["update_norm_per_step"] == pytest.approx(0.2)
    assert math.isnan(uniform["grad_norm_per_step"])  # runs written before the norms
    assert uniform["delta_final"] is None and uniform["paired_seeds"] == 0
    assert (fast["pass_k"], fast["final_pass@k"]) == (4, pytest.approx((0.75 + 0.875 + 0.5) / 3))
    # the accuracy table's target is uniform's mean final, 0.5: uniform's seed 2 ends below it
    assert summary["target_pass@1"] == 0.5 and uniform["reached"] == "2/3"
    out = tmp_path / "c"
    table = (out / "table.md").read_text()
    digest = hashlib.sha256(b"firstsecond").hexdigest()[:12]
    assert table.splitlines()[0].startswith(f"Warm start `{model}`, weights sha256 `{digest}`;")
    assert "command: `(called from Python)`" in table.splitlines()[0]
    assert summary["provenance"]["weights_sha256"] == digest
    assert (
        "| fast | 3 | +8.3 ± 17.9 pts | 2/1/0 | +4.2 ± 17.9 pts | 1/2/0 | +6.2 ± 23.3 pts | "
        "2/0/1 | 0.56× [0.33, 0.83] (3/3) | 1.00× | 0.39× [0.17, 0.75] |"
    ) in table
    assert "| Δ final pass@4 (95 % CI) | W/T/L |" in table
    assert "Rollouts to target: the rollouts from which the entrant's held-out" in table
    assert "10,000 resamples" in table
    assert "| fast | 25.0 | 5.0 | 0.250 | 2.0 | 2.5 | 0.2 | 10.00 | 2.5 % |" in table
    assert "| uniform | 20.0 | 4.0 | 0.200 | 1.0 | — | — | 10.00 | 1.0 % |" in table
    assert "| entrant | seeds | start pass@1 | final pass@1 (95 % CI) | final pass@4" in table
    header = (out / "results.csv").read_text().splitlines()[0].split(",")
    for column in ("entrant", "delta_final", "delta_auc_ci95", "rollouts_ratio", "seconds_ratio",
                   "wins", "informative_prompts_per_step", "rounds_per_step", "delta_pass_k",
                   "signs_final", "signs_pass_k", "rollouts_ratio_ci95_low", "grad_norm_per_step",
                   "update_norm_per_step", "step_seconds_ratio", "final_pass@k"):  # fmt: skip
        assert column in header
    assert "No calibration plot: no run holds beliefs.json" in table.splitlines()[-1]
    assert (out / "accuracy.png").exists() and (out / "informative.png").exists()
    # one seed: no interval
    one = tabulate(dataclasses.replace(cfg, seeds=1))
    assert one["paired"]["fast"]["delta_final"] == [0.125]
    table = (out / "table.md").read_text()
    assert "| fast | 1 | +12.5 pts (± —) | 1/0/0 |" in table and "| uniform | 1 | 25.0 % |" in table
    assert "| 0.33× (1/1) | 1.00× | 0.17× |" in table  # one seed: no interval
    # the baseline can be any entrant
    flipped = tabulate(dataclasses.replace(cfg, baseline="fast"))
    assert flipped["paired"]["uniform"]["delta_final"] == [-0.125, -0.125, 0.0]
    assert flipped["paired"]["uniform"]["wins"] == 0


# --- tabulating a recorded competition, and its evidence ---------------------------------------
def _body(table_md: Path) -> list[str]:
    """table.md without its first line (the date and the command that tabulated it)."""
    return table_md.read_text().splitlines()[1:]


def test_tables_are_the_same_from_steps_csv_alone(tmp_path: Path) -> None:
    cfg = known_competition(tmp_path)
    first = tabulate(cfg)
    out = tmp_path / "c"
    table = _body(out / "table.md")
    for name in ("uniform", "fast"):
        for seed in range(3):
            run = cfg.run_dir(name, seed)
            head = (run / "steps.csv").read_text().splitlines()[0]
            assert "loss" not in head and "utility" not in head  # only what the tables read
            (run / "metrics.jsonl").unlink()
    again = tabulate(cfg)
    assert _body(out / "table.md") == table
    for a, b in zip(first["rows"], again["rows"], strict=True):
        assert a.keys() == b.keys()
        for k in a:
            if isinstance(a[k], float):
                assert b[k] == pytest.approx(a[k], rel=1e-5, nan_ok=True), k
            else:
                assert b[k] == a[k], k


def test_tabulate_and_evidence_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainers.cli import main as cli

    cfg = known_competition(tmp_path)
    out, dest = tmp_path / "c", tmp_path / "evidence"
    # files the evidence leaves out: the big, the binary and the private
    run = cfg.run_dir("fast", 1)
    (run / "beliefs.json").write_text(json.dumps({"rates": [0.0, 1.0, 0.5], "rollouts": [8, 8, 4]}))
    (run / "run.log").write_text("log")
    (run / "checkpoints" / "step-000004").mkdir(parents=True)
    (run / "checkpoints" / "step-000004" / "model.safetensors").write_bytes(b"w")
    (run / "tb").mkdir()
    (run / "tb" / "events.out.tfevents.1").write_bytes(b"e")
    (run / "provenance.json").write_text(json.dumps({"starts": []}))
    (run / "config.json").write_text(json.dumps(cfg.run_config("fast", 1).to_dict()))
    assert cli(["compete", "--tabulate", str(out), "--evidence", str(dest)]) == 0
    printed = capsys.readouterr().out
    assert f"evidence: {dest}" in printed and "| fast | 3 |" in printed
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    per_run = ["config.json", "eval.jsonl", "provenance.json", "steps.csv", "summary.json"]
    copied = [f"runs/{n}/seed{s}/{f}" for n in ("fast", "uniform") for s in range(3)
              for f in (per_run if (n, s) == ("fast", 1) else
                        ["eval.jsonl", "steps.csv", "summary.json"])]  # fmt: skip
    written = ["accuracy.png", "informative.png", "results.csv", "summary.json", "table.md"]
    assert files == sorted(["command.txt", "config.json", "e.yaml", *copied, *written])
    # no command was recorded for this competition: command.txt holds an equivalent one
    command = (dest / "command.txt").read_text()
    assert "No command was recorded" in command
    rebuilt = command.splitlines()[1]
    assert rebuilt.startswith(f"adaroll compete --entrants {cfg.entrants} --out {out} --model ")
    # it runs this very competition: parsed back, the config that ran
    from adaroll_env.arguments import config_from_args
    from trainers.cli import build_parser

    args = build_parser("compete").parse_args(shlex.split(rebuilt)[1:])
    again = config_from_args(CompeteConfig, args)
    assert dataclasses.asdict(again) == json.loads((out / "config.json").read_text())
    # the evidence regenerates every table: the same body, but no calibration plot
    original = _body(out / "table.md")
    assert (out / "calibration.png").exists() and not (dest / "calibration.png").exists()
    assert "calibration" not in "\n".join(original)
    copy = _body(dest / "table.md")
    assert copy[:-2] == original and copy[-2] == ""
    assert copy[-1].startswith("No calibration plot: no run holds beliefs.json")
    assert (
        f"command: `adaroll compete --tabulate {out} --evidence {dest}`"
        in ((dest / "table.md").read_text().splitlines()[0])
    )
    summary = json.loads((dest / "summary.json").read_text())
    assert summary["paired"]["fast"]["delta_final"] == [0.125, 0.125, 0.0]
    # and from the evidence alone, again (it now holds a table of its own to overwrite)
    assert cli(["compete", "--tabulate", str(dest), "--baseline", "fast"]) == 0
    assert "**Paired against fast**" in (dest / "table.md").read_text()


def test_resume_runs_what_is_left_with_the_recorded_settings(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainers.cli import main as cli

    out = tmp_path / "c"
    start = ["compete", "--allocators", "uniform", "--seeds", "2", "--workers", "1",
             "--model", str(tiny_model_dir), "--steps", "2", "--batch-size", "4",
             "--group-size", "2", "--eval-every", "2", "--eval-size", "4", "--eval-k", "1",
             "--no-progress", "--out", str(out)]  # fmt: skip
    assert cli(start) == 0
    recorded = (out / "config.json").read_text()
    done = out / "runs" / "uniform" / "seed0" / "summary.json"
    before = done.stat().st_mtime_ns
    shutil.rmtree(out / "runs" / "uniform" / "seed1")  # as if stopped before it started
    capsys.readouterr()
    assert cli(["compete", "--resume", str(out), "--workers", "1", "--no-progress"]) == 0
    assert "1 already done" in capsys.readouterr().out
    assert (out / "runs" / "uniform" / "seed1" / "DONE").is_file()
    assert done.stat().st_mtime_ns == before  # the finished run was not touched
    assert (out / "config.json").read_text() == recorded  # the same competition
    assert json.loads(recorded)["resume"] is None
    starts = (out / "command.txt").read_text().splitlines()
    assert len(starts) == 2 and f"--resume {out}" in starts[1]
    assert json.loads((out / "summary.json").read_text())["runs"] == {"uniform": [0, 1]}
    for args, what in [
        (["--steps", "5"], r"--resume .*takes the competition's settings .*drop --steps \(5\)"),
        (["--allocators", "bamdp"], r"drop --allocators \('bamdp'\) \(only --workers"),
        (["--tabulate", str(out)], r"--tabulate .* and --resume .* both given"),
        (["--evidence", str(out)], r"--evidence .* is the competition directory"),
    ]:  # fmt: skip
        with pytest.raises(SystemExit) as exc:
            cli(["compete", "--resume", str(out), *args])
        assert exc.value.code == 2
        assert re.search(what, capsys.readouterr().err), what
    with pytest.raises(SystemExit):
        cli(["compete", "--resume", str(tmp_path / "nowhere")])
    err = capsys.readouterr().err
    assert f"--resume {tmp_path / 'nowhere'}: no config.json there" in err


def test_a_competition_keeps_its_evidence_and_continues_from_it_on_a_fresh_clone(
    tiny_model_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--evidence while a competition runs: each finished run's small files go to DEST as it
    finishes; a rerun whose --out was lost (a fresh clone with DEST committed) restores them
    and runs only what DEST lacks."""
    from trainers.cli import main as cli

    # a path longer than the console is wide: the messages naming it must stay one line
    out, dest = tmp_path / "c", tmp_path / ("evidence-" + "x" * 120)
    start = ["compete", "--allocators", "uniform", "--seeds", "2", "--workers", "1",
             "--model", str(tiny_model_dir), "--steps", "2", "--batch-size", "4",
             "--group-size", "2", "--eval-every", "2", "--eval-size", "4", "--eval-k", "1",
             "--no-progress", "--out", str(out), "--evidence", str(dest)]  # fmt: skip
    # each run is kept as it finishes, before any table: a competition that dies before its
    # tables has its finished runs, steps.csv included, in DEST
    import trainers.experiments.compete as compete_module

    def crash(cfg: CompeteConfig) -> dict[str, Any]:
        raise RuntimeError("the machine went away")

    monkeypatch.setattr(compete_module, "tabulate", crash)
    with pytest.raises(RuntimeError, match="went away"):
        cli(start)
    monkeypatch.undo()
    per_run = ["config.json", "eval.jsonl", "provenance.json", "steps.csv", "summary.json"]
    for seed in (0, 1):
        kept = dest / "runs" / "uniform" / f"seed{seed}"
        assert sorted(p.name for p in kept.iterdir()) == per_run
    assert not (dest / "table.md").exists()
    assert cli(start) == 0  # nothing left to run: the tables, of the runs and of DEST
    printed = capsys.readouterr().out
    assert "2 already done" in printed and f"evidence: {dest}" in printed
    assert (dest / "table.md").is_file() and (dest / "command.txt").is_file()
    summary = (kept / "summary.json").read_text()
    accuracy = ("final_pass@1", "final_pass@k", "auc_pass@1", "rollouts", "seeds")

    def table() -> list[dict[str, Any]]:  # the accuracy columns (the timing ones vary)
        rows = json.loads((dest / "summary.json").read_text())["rows"]
        return [{k: row[k] for k in accuracy} for row in rows]

    before = table()
    starts = (dest / "command.txt").read_text().splitlines()
    assert len(starts) == 2  # one line per start
    # the session ends: everything but the evidence is gone; seed 1 is lost from it too
    shutil.rmtree(out)
    shutil.rmtree(dest / "runs" / "uniform" / "seed0")
    assert cli(start) == 0
    printed = capsys.readouterr().out
    # the earlier starts' commands stay on record, this one's appended
    assert (dest / "command.txt").read_text().splitlines()[:2] == starts
    assert len((dest / "command.txt").read_text().splitlines()) == 3
    assert "1 already done" in printed
    assert f"restored from the evidence in {dest}: uniform seed 1\n" in printed  # one line
    assert f"log: {out / 'compete.log'}\n" in printed  # the first line is one line too
    assert (out / "runs" / "uniform" / "seed0" / "DONE").is_file()  # run again
    assert not (out / "runs" / "uniform" / "seed1" / "DONE").exists()  # restored, not run
    assert (out / "runs" / "uniform" / "seed1" / "summary.json").read_text() == summary
    assert (dest / "runs" / "uniform" / "seed0" / "summary.json").is_file()  # kept again
    assert table() == before  # the same runs, the same table
    assert json.loads((dest / "summary.json").read_text())["runs"] == {"uniform": [0, 1]}
    # --resume keeps the recorded --evidence
    assert CompeteConfig(resume=str(out)).evidence == str(dest)
    # a run started under --out while the evidence holds it finished: refused, not overwritten
    shutil.rmtree(out / "runs" / "uniform" / "seed1")
    (out / "runs" / "uniform" / "seed1").mkdir()
    (out / "runs" / "uniform" / "seed1" / "metrics.jsonl").write_text("{}\n")
    with pytest.raises(SystemExit):
        cli(["compete", "--resume", str(out), "--workers", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert "holds a started run of entrant 'uniform', seed 1" in err and "remove" in err
    # evidence that ran with other settings than the entrant now has: refused
    shutil.rmtree(out)
    changed = json.loads((kept / "config.json").read_text())
    changed["lr"] = 0.5
    (kept / "config.json").write_text(json.dumps(changed))
    with pytest.raises(SystemExit):
        cli(start)
    assert re.search(r"ran with other settings than entrant 'uniform' has now .*lr",
                     capsys.readouterr().err)  # fmt: skip
    # a destination holding something else is refused before any run starts
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("x")
    with pytest.raises(SystemExit):
        cli([*start[:-1], str(other)])
    assert "already holds other files (mine.txt)" in capsys.readouterr().err
    assert not (out / "runs").exists()


def test_tabulate_takes_its_settings_from_the_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainers.cli import main as cli

    cfg = known_competition(tmp_path)
    out = tmp_path / "c"
    recorded = CompeteConfig(tabulate=str(out))
    assert recorded.names() == ["uniform", "fast"] and recorded.seed_list() == [0, 1, 2]
    assert recorded.grpo == cfg.grpo and recorded.out == str(out)
    assert recorded.entrant("fast").allocator == "thompson"
    # a setting that is neither its default nor the recorded one is refused, naming it
    for args, what in [
        (["--steps", "5"], r"drop --steps \(5\)"),
        (["--seeds", "2", "--allocators", "uniform"],
         r"drop --allocators \('uniform'\), --seeds \(2\)"),
        (["--baseline", "unifrom"], r"unknown baseline entrant 'unifrom'. Did you mean 'uniform'"),
        (["--evidence", str(out)], "is the competition directory itself"),
    ]:  # fmt: skip
        with pytest.raises(SystemExit) as exc:
            cli(["compete", "--tabulate", str(out), *args])
        assert exc.value.code == 2
        assert re.search(what, capsys.readouterr().err), what
    # the recorded value itself may be repeated
    assert CompeteConfig(tabulate=str(out), seeds=3).seeds == 3
    with pytest.raises(ValueError, match=r"no config.json there, so it is not a competition"):
        CompeteConfig(tabulate=str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match=r"is not the config.json of adaroll compete"):
        CompeteConfig(tabulate=str(tmp_path / "model"))  # a model's config.json
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"already holds other files \(notes.txt\)"):
        from trainers.experiments.compete import tabulate_recorded

        tabulate_recorded(CompeteConfig(tabulate=str(out), evidence=str(tmp_path / "full")))
    # a run a signal stopped before its last step is left out, and the table says so
    summary = cfg.run_dir("fast", 2) / "summary.json"
    summary.write_text(json.dumps({"steps": 3, "stopped_by": "SIGTERM", "minutes": 1.0,
                                   "rollouts_total": 150}))  # fmt: skip
    got = tabulate(recorded)
    assert got["runs"] == {"uniform": [0, 1, 2], "fast": [0, 1]}
    assert (
        "Left out, unfinished: fast seed 2 (stopped by SIGTERM after step 3)."
        in (out / "table.md").read_text()
    )


def _compete_args(model: Path, out: Path, allocators: str, *extra: str) -> list[str]:
    return ["compete", "--allocators", allocators, "--seeds", "1", "--workers", "2",
            "--model", str(model), "--batch-size", "4", "--group-size", "2", "--eval-size", "4",
            "--eval-k", "1", "--no-progress", "--out", str(out), *extra]  # fmt: skip


@pytest.mark.slow
def test_a_closed_output_neither_hangs_nor_fails_the_competition(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """``adaroll compete … | head -n 1``: the reader goes after one line; the competition
    finishes every run and its tables, exits 0, and its output is all in compete.log."""
    import shlex
    import subprocess
    import sys

    out = tmp_path / "c"
    args = _compete_args(tiny_model_dir, out, "uniform,bamdp", "--steps", "3", "--eval-every", "3")
    command = shlex.join([sys.executable, "-m", "trainers.cli", *args])
    proc = subprocess.run(["bash", "-c", f"set -o pipefail; {command} | head -n 1"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("compete: 2 runs") and proc.stdout.count("\n") == 1
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr
    log = (out / "compete.log").read_text()
    assert "compete: 2 runs" in log and "| entrant" in log.replace("|  entrant", "| entrant")
    assert (out / "table.md").exists() and (out / "summary.json").exists()
    for spec in ("uniform", "bamdp"):
        run = out / "runs" / spec / "seed0"
        assert json.loads((run / "DONE").read_text())["steps"] == 3
        assert "adaroll grpo:" in (run / "run.log").read_text()  # the worker's own output


@pytest.mark.slow
def test_sigterm_with_a_stuck_worker_ends_the_competition_naming_it(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """A worker stuck inside a step never finishes it: after SIGTERM the others save and stop,
    the stuck one is killed after --stop-grace and named with the checkpoint it resumes from."""
    import signal
    import subprocess
    import sys
    import time

    from trainers.run.grpo_command import read_jsonl

    stuck = "tests.trainers.experiments.stuck_allocator:StuckAllocator"
    out = tmp_path / "c"
    args = _compete_args(tiny_model_dir, out, f"uniform,{stuck}", "--steps", "100000",
                         "--eval-every", "100000", "--save-every", "1",
                         "--stop-grace", "3")  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "trainers.cli", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    runs = out / "runs"
    deadline = time.monotonic() + 600
    stuck_dir = uniform_dir = None
    while (
        stuck_dir is None
        or len(read_jsonl(stuck_dir / "metrics.jsonl")) < 2
        or (len(read_jsonl(uniform_dir / "metrics.jsonl")) < 2)
    ):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.5)
        dirs = [d for d in runs.iterdir() if d.name != "uniform"] if runs.is_dir() else []
        stuck_dir = dirs[0] / "seed0" if dirs else None
        uniform_dir = runs / "uniform" / "seed0"
    time.sleep(2)  # the stuck run is now inside its third step for good
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 143, stderr[-3000:]
    assert time.monotonic() - t0 < 60
    message = stdout.strip().splitlines()[-1]
    assert f"{stuck_dir} was stuck after step 2 and was killed after 3 s" in message, stdout
    assert "resumes from its checkpoint of step 2" in message
    assert "rerun the same command" in message
    assert json.loads((uniform_dir / "summary.json").read_text())["stopped_by"] == "SIGTERM"
    assert "killed:" in (out / "compete.log").read_text()


def test_a_competition_recorded_before_belief_fit_resumes_with_discounted_counts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import dataclasses

    from trainers.experiments import compete

    original = compete._competition_defaults
    # as if the default had moved on: a recorded competition without the field keeps its rule
    monkeypatch.setattr(
        compete,
        "_competition_defaults",
        lambda: dataclasses.replace(original(), belief_fit="weighted"),
    )
    data = {k: v for k, v in dataclasses.asdict(original()).items() if k != "belief_fit"}
    where = tmp_path / "config.json"
    assert compete._recorded_grpo(data, where).belief_fit == "discounted"
    assert compete._recorded_grpo({**data, "belief_fit": "weighted"}, where).belief_fit == (
        "weighted"
    )
