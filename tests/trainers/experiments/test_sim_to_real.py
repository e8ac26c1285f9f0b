"""``adaroll bench --from-run``: fake run and competition directories built by hand, with known
counts, checked for the fitted truth, the chosen belief, the allocation setting and the report."""

import json
from pathlib import Path

import numpy as np
import pytest

from adaroll_env.arguments import parse_config
from adaroll_env.priors import BetaMixture, fit_beta_binomial
from agents.benchmarks import BenchConfig
from trainers.experiments.sim_to_real import (
    competition_baseline,
    evidence_steps,
    fit_truth,
    live_figures,
    run_belief,
    run_from_runs,
    sim_setup,
)
from trainers.run.run_files import read_run, runs_of

CONFIG = {
    "allocator": "uniform",
    "allocator_kwargs": None,
    "utility": "informative",
    "batch_size": 16,
    "group_size": 8,
    "budget": None,
    "round_size": None,
    "rounds": None,
    "pool_size": None,
    "pilot": 0,
    "max_group": None,
    "prior_alpha": 1.0,
    "prior_beta": 1.0,
    "belief_decay": 0.9,
    "belief_prior": "fixed",
    "belief_group": "none",
    "seed": 0,
}


def counts(a, b, prompts, n=8, seed=0):
    """Discounted-looking counts: n rollouts per prompt of pass rate p ~ Beta(a, b), scaled."""
    rng = np.random.default_rng(seed)
    s = rng.binomial(n, rng.beta(a, b, size=prompts)).astype(float)
    return 0.5 * s, 0.5 * (n - s)  # discounted by one step of decay 0.5


def make_run(
    d: Path,
    *,
    s=None,
    f=None,
    groups=None,
    old=False,
    steps=25,
    beliefs=None,
    **config,
):
    """A run directory: config.json, metrics.jsonl (gradient_rollouts = 10·step), beliefs.json."""
    d.mkdir(parents=True, exist_ok=True)
    if s is None:
        s, f = counts(0.5, 1.0, 300)
    (d / "config.json").write_text(json.dumps({**CONFIG, **config}))
    with (d / "metrics.jsonl").open("w") as fh:
        for t in range(steps):
            row = {
                "step": t,
                "questions": 16,
                "informative_frac": t / 100,
                "gradient_rollouts": 10 * t,
            }
            if not old:
                row["informative_prompts"] = t
            fh.write(json.dumps(row) + "\n")
    n = np.asarray(s) + np.asarray(f)
    record = {
        "step": steps,
        "decay": 0.9,
        "ids": list(range(len(n))),
        "rates": np.where(n > 0, np.asarray(s) / np.maximum(n, 1e-12), 0.5).tolist(),
        "rollouts": n.tolist(),
        "fitted_prior": None,
    }
    if not old:
        record.update(
            successes=list(map(float, s)),
            failures=list(map(float, f)),
            groups=groups if groups is not None else [None] * len(n),
            group_priors={},
            fixed_prior=[CONFIG["prior_alpha"], CONFIG["prior_beta"]],
            calibration={},
        )
    record.update(beliefs or {})
    (d / "beliefs.json").write_text(json.dumps(record))
    return d


def make_competition(root: Path, entrants=("uniform", "bamdp"), seeds=2, **config):
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps({"allocators": ",".join(entrants)}))
    for a in entrants:
        for k in range(seeds):
            s, f = counts(0.5, 1.0, 200, seed=k)
            make_run(root / "runs" / a / f"seed{k}", s=s, f=f, allocator=a, seed=k, **config)
    return root


def _cfg(tmp_path, dirs, **kw):
    base = dict(
        from_run=[str(d) for d in dirs],
        episodes=40,
        workers=1,
        out=str(tmp_path / "out"),
        name="check",
        progress=False,
    )
    base.update(kw)
    return BenchConfig(**base)


# --- truth and belief -----------------------------------------------------------------------


def test_truth_is_the_beta_binomial_fit_of_the_counts(tmp_path):
    s, f = counts(0.5, 2.0, 300)
    run = read_run(make_run(tmp_path / "r", s=s, f=f))
    truth = fit_truth(run.beliefs)
    assert truth.groups == (None,) and truth.weights == (1.0,)
    assert (truth.alpha[0], truth.beta[0]) == fit_beta_binomial(s, f)
    assert any("discounted" in n for n in truth.notes)  # half of an odd count
    # whole counts (evidence of one step, no decay yet) recover the generating Beta(0.5, 2)
    s, f = 2 * s, 2 * f
    truth = fit_truth(read_run(make_run(tmp_path / "whole", s=s, f=f)).beliefs)
    assert truth.alpha[0] == pytest.approx(0.5, rel=0.3)
    assert truth.beta[0] == pytest.approx(2.0, rel=0.3)
    assert truth.notes == (
        "beliefs.json does not record when each prompt was last seen (written before "
        "2026-12-06): every prompt's counts weigh the same in the fit, however old",
    )


def test_truth_weights_each_prompt_by_its_age_where_the_file_says_it(tmp_path):
    s, f = counts(0.3, 0.8, 300)
    s, f = 2 * s, 2 * f  # whole counts as observed
    seen = np.arange(300) % 25  # last updated at steps 0..24; the run ended at step 25
    run = read_run(make_run(tmp_path / "r", s=s, f=f, beliefs={"seen": seen.tolist()}))
    assert run.beliefs.step == 25 and run.beliefs.seen is not None
    truth = fit_truth(run.beliefs)
    w = 0.9 ** (25 - seen.astype(float))
    assert (truth.alpha[0], truth.beta[0]) == fit_beta_binomial(s, f, weights=w)
    assert (truth.alpha[0], truth.beta[0]) != fit_beta_binomial(s, f)  # the weights count
    assert not truth.notes  # whole counts, ages known: nothing to warn about
    with pytest.raises(ValueError, match="'seen' \\(3\\) and counts \\(300\\) differ"):
        read_run(make_run(tmp_path / "bad", s=s, f=f, beliefs={"seen": [0, 1, 2]}))


def test_grouped_truth_per_group_in_store_proportions(tmp_path):
    s1, f1 = counts(4.0, 1.0, 300, seed=1)  # easy group "1"
    s2, f2 = counts(1.0, 4.0, 100, seed=2)  # hard group "2"
    s = np.concatenate([s1, s2, [1.0]])
    f = np.concatenate([f1, f2, [1.0]])
    groups = [1] * 300 + [2] * 100 + [7]  # group 7: one prompt, no fit of its own
    run = read_run(make_run(tmp_path / "r", s=s, f=f, groups=groups))
    truth = fit_truth(run.beliefs)
    assert truth.groups == ("1", "2", "7")
    assert truth.weights == pytest.approx((300 / 401, 100 / 401, 1 / 401))
    assert (truth.alpha[0], truth.beta[0]) == fit_beta_binomial(s1, f1)
    assert (truth.alpha[1], truth.beta[1]) == fit_beta_binomial(s2, f2)
    assert (truth.alpha[2], truth.beta[2]) == fit_beta_binomial(s, f)
    assert any("group 7" in n for n in truth.notes)


def test_belief_fixed_is_the_configured_prior(tmp_path):
    run = read_run(make_run(tmp_path / "r", prior_alpha=0.3, prior_beta=0.7))
    belief = run_belief(run.settings, run.beliefs, fit_truth(run.beliefs))
    assert (belief.alpha, belief.beta) == ((0.3,), (0.7,))
    assert belief.description == "fixed Beta(0.3, 0.7)"


def test_belief_fitted_is_the_runs_fitted_prior_per_group(tmp_path):
    s1, f1 = counts(4.0, 1.0, 100, seed=1)
    s2, f2 = counts(1.0, 4.0, 100, seed=2)
    d = make_run(
        tmp_path / "r",
        s=np.concatenate([s1, s2]),
        f=np.concatenate([f1, f2]),
        groups=["a"] * 100 + ["b"] * 100,
        belief_prior="fitted",
        belief_group="level",
        beliefs={"fitted_prior": [0.9, 0.8], "group_priors": {"*": [0.9, 0.8], "a": [3.0, 1.0]}},
    )
    run = read_run(d)
    belief = run_belief(run.settings, run.beliefs, fit_truth(run.beliefs))
    assert belief.alpha == (3.0, 0.9) and belief.beta == (1.0, 0.8)  # "b" has no own fit: "*"
    assert "per group" in belief.description


def test_belief_fitted_without_a_recorded_fit_falls_back_to_fixed(tmp_path):
    run = read_run(make_run(tmp_path / "r", belief_prior="fitted", prior_alpha=2.0))
    belief = run_belief(run.settings, run.beliefs, fit_truth(run.beliefs))
    assert (belief.alpha, belief.beta) == ((2.0,), (1.0,))
    assert belief.notes


def test_old_format_beliefs_derive_successes_from_rates(tmp_path):
    s, f = counts(0.5, 1.0, 300)
    run = read_run(make_run(tmp_path / "r", s=s, f=f, old=True))
    assert run.beliefs.old_format
    np.testing.assert_allclose(run.beliefs.successes, s)
    np.testing.assert_allclose(run.beliefs.failures, f)
    assert run.beliefs.groups == (None,) * 300
    result = run_from_runs(_cfg(tmp_path, [run.path]))
    assert "older format" in result.markdown
    # metrics without informative_prompts: derived from the fraction and the questions
    assert result.runs[0]["live"]["informative_prompts"]["mean"] == pytest.approx(
        16 * np.mean([t / 100 for t in range(6, 25)])
    )


# --- the allocation setting -----------------------------------------------------------------


def test_setting_pool_rounds_and_budget(tmp_path):
    def setup(**config):
        return sim_setup(read_run(make_run(tmp_path / str(len(config)), **config)))

    p = setup(allocator="uniform", pool_size=32).params  # outcome-blind: B prompts, one round
    assert (p.num_questions, p.total_budget, p.round_size) == (16, 128, 128)
    p = setup(allocator="bamdp", pool_size=32, rounds=3, pilot=1).params
    assert (p.num_questions, p.round_size, p.pilot) == (32, 43, 1)  # ceil(128 / 3)
    p = setup(allocator="greedy", budget=96, round_size=10, max_group=12, utility="snr(8)").params
    assert (p.num_questions, p.total_budget, p.round_size, p.max_group) == (16, 96, 10, 12)
    assert p.utility == "snr(8)"
    assert setup(allocator="bamdp").params.round_size == 16  # adaptive default: R = B


def test_allocator_kwargs_reach_the_simulated_allocator(tmp_path):
    d = make_run(tmp_path / "r", allocator="pilot_commit", allocator_kwargs='{"pilot": 1}')
    setup = sim_setup(read_run(d))
    assert setup.kwargs == {"pilot": 1}


# --- the report -----------------------------------------------------------------------------


def test_run_report_has_predicted_and_live_figures(tmp_path):
    d = make_run(tmp_path / "run-a")
    result = run_from_runs(_cfg(tmp_path, [d], episodes=200))
    row = result.runs[0]
    # the evidence spans one pass over 300 prompts at 16 a step (19 steps; the memory of decay
    # 0.9 is 10): live figures of the last 19 of 25 steps, gradient_rollouts = 10·step
    assert row["error"] is None and row["live_last_steps"] == 19
    assert row["live"]["steps"] == 19
    assert row["live"]["gradient_rollouts"]["mean"] == pytest.approx(10 * np.mean(range(6, 25)))
    assert row["live_all_steps"]["gradient_rollouts"]["mean"] == pytest.approx(120.0)
    # predicted: uniform gives 8 rollouts each to 16 prompts; the exact informative fraction is
    # 1 - E[p^8 + (1-p)^8] under the fitted truth
    truth = row["truth_fit"]
    exact = 1 - BetaMixture(((1.0, truth["alpha"][0], truth["beta"][0]),)).degenerate_probability(8)
    pred = row["predicted"]["informative_frac"]
    assert abs(pred["mean"] - exact) < 3 * pred["ci95"]
    assert row["predicted"]["gradient_rollouts"]["mean"] == pytest.approx(
        8 * row["predicted"]["informative_prompts"]["mean"]
    )
    md = (result.run_dir / "from_run.md").read_text()
    assert "gradient rollouts: sim" in md and "| run-a | 0 | uniform |" in md
    saved = json.loads((result.run_dir / "from_run.json").read_text())
    assert saved["runs"][0]["predicted"]["gradient_rollouts"]["mean"] == pytest.approx(
        row["predicted"]["gradient_rollouts"]["mean"]
    )
    assert any("per-prompt history ignored" in n for n in saved["notes"])


def test_competition_two_entrants_averaged_and_ranked(tmp_path):
    comp = make_competition(tmp_path / "comp")
    kind, runs, skipped = runs_of(comp)
    assert kind == "competition" and not skipped
    assert [(r.entrant, r.seed) for r in runs] == [
        ("uniform", 0),
        ("uniform", 1),
        ("bamdp", 0),
        ("bamdp", 1),
    ]
    result = run_from_runs(_cfg(tmp_path, [comp]))
    assert [e["entrant"] for e in result.entrants] == ["uniform", "bamdp"]
    for e in result.entrants:
        per_seed = [
            r["predicted"]["gradient_rollouts"]["mean"]
            for r in result.runs
            if r["entrant"] == e["entrant"]
        ]
        assert e["runs"] == 2
        assert e["predicted"]["gradient_rollouts"]["mean"] == pytest.approx(np.mean(per_seed))
    assert {k["metric"] for k in result.rankings} == {
        "gradient_rollouts",
        "informative_prompts",
        "informative_frac",
    }
    for k in result.rankings:
        assert k["spearman"] is None  # two entrants: no rank correlation
        assert isinstance(k["same_order"], bool)
    assert "Entrants, mean over seeds" in result.markdown


def test_the_whole_field_against_live_training(tmp_path):
    entrants = ("thompson", "uniform", "bamdp")
    comp = make_competition(tmp_path / "comp", entrants=entrants, seeds=2)
    finals = {"thompson": [0.25, 0.5], "uniform": [0.375, 0.375], "bamdp": [0.5, 0.625]}
    for a, by_seed in finals.items():
        for k, final in enumerate(by_seed):
            evals = [{"step": 0, "rollouts_total": 0, "pass@1": 0.25},
                     {"step": 25, "rollouts_total": 3200, "pass@1": final}]  # fmt: skip
            (comp / "runs" / a / f"seed{k}" / "eval.jsonl").write_text(
                "".join(json.dumps(e) + "\n" for e in evals)
            )
    result = run_from_runs(_cfg(tmp_path, [comp], episodes=10))
    (report,) = result.field_report
    assert report["comparison"] == "comp" and report["baseline"] == "uniform"  # no "baseline" set
    e = {x["entrant"]: x for x in report["entrants"]}
    assert e["bamdp"]["delta_final"] == pytest.approx((0.125 + 0.25) / 2)
    assert e["thompson"]["delta_final"] == pytest.approx((-0.125 + 0.125) / 2)
    assert e["uniform"]["delta_final"] == 0.0 and e["uniform"]["predicted_gain"] == 0.0
    for name, x in e.items():
        runs = [r for r in result.runs if r["entrant"] == name]
        assert x["predicted"] == pytest.approx(
            np.mean([r["predicted"]["gradient_rollouts"]["mean"] for r in runs])
        )
        assert x["live"] == pytest.approx(10 * np.mean(range(25)))  # every run's metrics alike
        assert x["predicted_gain"] == pytest.approx(x["predicted"] / e["uniform"]["predicted"] - 1)
    # live gradient rollouts are equal for all three: no ordering to correlate with
    assert report["spearman"]["live"] == {"rho": None, "n": 3}
    from scipy.stats import spearmanr

    rho = report["spearman"]["delta_final"]
    expected = spearmanr(
        [x["predicted"] for x in e.values()], [x["delta_final"] for x in e.values()]
    )
    assert rho["n"] == 3 and rho["rho"] == pytest.approx(expected[0])
    assert "The field against live training (baseline uniform)" in result.markdown
    assert "| +18.75 pts (2 seeds) |" in result.markdown  # bamdp's live Δ final pass@1
    assert "Spearman rank correlation of the simulator's ordering" in result.markdown
    saved = json.loads((result.run_dir / "from_run.json").read_text())
    assert saved["field"][0]["baseline"] == "uniform"


def test_a_competitions_baseline_follows_adaroll_compete():
    present = ["uniform", "bamdp", "sb3_pretrained"]
    assert competition_baseline({"allocators": "bamdp,uniform"}, present) == "uniform"
    assert competition_baseline({"baseline": "sb3:pretrained"}, present) == "sb3_pretrained"
    entrants = [{"name": "b2"}, {"name": "bamdp"}]
    assert competition_baseline({"resolved_entrants": entrants}, ["bamdp", "b2"]) == "b2"
    assert competition_baseline({"baseline": "gone"}, present) is None  # no run of it here


def test_unfinished_competition_run_is_skipped_and_said(tmp_path):
    comp = make_competition(tmp_path / "comp", entrants=("uniform",), seeds=2)
    (comp / "runs" / "uniform" / "seed1" / "beliefs.json").unlink()
    _, runs, skipped = runs_of(comp)
    assert len(runs) == 1 and "seed1" in skipped[0] and "beliefs.json" in skipped[0]


def test_unknown_allocator_is_said_in_its_row(tmp_path):
    good = make_run(tmp_path / "good")
    bad = make_run(tmp_path / "bad", allocator="no_such_package_xyz.mod:Alloc")
    result = run_from_runs(_cfg(tmp_path, [good, bad]))
    rows = {r["entrant"]: r for r in result.runs}
    assert rows["good"]["error"] is None
    assert rows["bad"]["error"].startswith("cannot simulate")
    assert rows["bad"]["predicted"]["gradient_rollouts"]["mean"] is None
    assert rows["bad"]["live"]["gradient_rollouts"]["mean"] is not None
    assert "cannot simulate" in result.markdown


def test_same_predictions_with_worker_processes(tmp_path):
    d = make_run(tmp_path / "r", allocator="bamdp")
    one = run_from_runs(_cfg(tmp_path, [d], episodes=12), write=False)
    two = run_from_runs(_cfg(tmp_path, [d], episodes=12, workers=2), write=False)
    assert one.runs[0]["predicted"] == two.runs[0]["predicted"]


def test_evidence_steps():
    assert evidence_steps(50_000, 64, 0.95) == 782  # one pass over the prompts
    assert evidence_steps(500, 64, 0.95) == 20  # revisited often: the store's memory
    assert evidence_steps(500, 64, 1.0) == 0  # nothing decays: all steps


def test_live_steps_option_overrides_the_span(tmp_path):
    d = make_run(tmp_path / "r")
    row = run_from_runs(_cfg(tmp_path, [d], live_steps=5, episodes=4), write=False).runs[0]
    assert row["live"]["steps"] == 5
    assert row["live"]["gradient_rollouts"]["mean"] == pytest.approx(220.0)
    row = run_from_runs(_cfg(tmp_path, [d], live_steps=0, episodes=4), write=False).runs[0]
    assert row["live"]["steps"] == 25


def test_live_figures_window():
    metrics = [{"gradient_rollouts": t, "informative_frac": 0.5, "questions": 4} for t in range(6)]
    live = live_figures(metrics, 2)
    assert live["steps"] == 2 and live["gradient_rollouts"]["mean"] == 4.5
    assert live["informative_prompts"]["mean"] == 2.0
    assert live_figures(metrics, 0)["gradient_rollouts"]["mean"] == 2.5


# --- errors and the command line -------------------------------------------------------------


def test_a_directory_of_neither_kind_names_what_was_expected(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("")
    with pytest.raises(ValueError, match=r"neither a run directory.*config.json, metrics.jsonl"):
        runs_of(tmp_path / "x")
    with pytest.raises(ValueError, match="no such directory"):
        runs_of(tmp_path / "missing")
    d = make_run(tmp_path / "r")
    (d / "beliefs.json").unlink()
    with pytest.raises(ValueError, match=r"has no beliefs\.json.*finishes"):
        runs_of(d)


def test_grid_options_are_refused_beside_from_run(tmp_path):
    with pytest.raises(ValueError, match=r"--rounds.*would be ignored"):
        _cfg(tmp_path, [tmp_path], rounds="1,2")
    with pytest.raises(ValueError, match="applies to --from-run only"):
        BenchConfig(live_steps=10)


def test_from_run_on_the_command_line(tmp_path, capsys):
    from trainers.cli import main

    d = make_run(tmp_path / "r")
    cfg = parse_config(BenchConfig, "", ["--from-run", str(d), str(tmp_path / "other")])
    assert cfg.from_run == [str(d), str(tmp_path / "other")]
    out = str(tmp_path / "out")
    args = ["bench", "--from-run", str(d), "--episodes", "5", "--workers", "1", "--out", out]
    assert main([*args, "--name", "cli", "--no-progress"]) == 0
    assert (tmp_path / "out" / "cli" / "from_run.md").is_file()
    with pytest.raises(SystemExit) as stop:
        main(["bench", "--from-run", str(tmp_path / "out"), "--no-progress"])
    assert stop.value.code == 2
    assert "neither a run directory" in capsys.readouterr().err


def test_a_config_without_a_pilot_value_reads_as_the_trainer_ran_it() -> None:
    from trainers.run.run_files import read_settings

    base = {**CONFIG, "allocator": "bamdp", "pilot": None, "round_schedule": "auto"}
    assert read_settings(base, Path("config.json")).pilot == 2  # bamdp's own, default rounds
    assert read_settings({**base, "rounds": 4}, Path("config.json")).pilot == 0
    assert read_settings({**base, "allocator": "uniform"}, Path("config.json")).pilot == 0
    assert read_settings({**base, "pilot": 1}, Path("config.json")).pilot == 1
