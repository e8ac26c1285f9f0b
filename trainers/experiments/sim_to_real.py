"""``adaroll bench --from-run``: does the simulator predict what live training did?

For each training run (a run directory of ``adaroll grpo``, or every finished run of an
``adaroll compete`` directory) the simulator replays the run's allocation setting:

- **truth**: pass rates drawn from the Beta fitted to the run's ``beliefs.json`` by Beta-binomial
  maximum likelihood of the per-prompt discounted counts (``fit_beta_binomial``); a run that
  grouped its beliefs gets one fit per group, and each simulated prompt draws its group in the
  proportions of the store (a group with fewer than two prompts of evidence takes the whole
  store's fit);
- **belief**: the prior the run's allocator saw live — ``fixed``: Beta(prior_alpha, prior_beta);
  ``fitted``: the run's fitted prior, per group when grouped. Per-prompt history is ignored (live,
  a revisited prompt's prior also carried its own discounted evidence);
- **allocation**: the run's allocator with its ``allocator_kwargs`` and utility, its budget N, round
  size (``round_schedule``, with ``"auto"`` the default schedule unless the run gave ``rounds`` or
  ``round_size``; else ``round_size``, else ceil(N / ``rounds``), else B for an adaptive
  allocator and N for an outcome-blind one, as the trainer does), pilot and cap; an adaptive
  allocator sees ``pool_size`` candidate prompts when the run set one (outcome-blind ones keep B).

It then compares, per run and per entrant (mean over seeds), the simulated figures per step with
the live ones of ``metrics.jsonl`` over the run's last steps — by default the steps that the
evidence of ``beliefs.json`` spans (each prompt's counts as of its last visit: one pass over the
store's prompts, P / questions per step, and at least the store's memory 1/(1 − decay) steps),
because the policy, and with it the pass rates, moves during training: gradient-carrying rollouts
(``gradient_rollouts``), informative fraction and distinct informative prompts; and says per
metric whether the simulator ranks the entrants in the live order (with Spearman's rank
correlation from three entrants). A run whose allocator cannot be built here says so in its row.
For a competition it also sets the whole field against its outcome (``field_rows``): per
entrant the simulator's gradient-carrying rollouts per step and its gain over the competition's
baseline, beside the live ones over the whole run and the live difference in final held-out
pass@1, with Spearman's rank correlation of the simulator's ordering with each live ordering.

About 570 lines, over the 500 of the house style, on purpose: reading a run's setting, fitting
its truth, simulating and comparing are one pipeline over the same run records; the file
parsing (``trainers.run.run_files``) and the report (``sim_to_real_report``) are already apart.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from adaroll_env import model as am
from adaroll_env.priors import fit_beta_binomial
from adaroll_env.stats import mean_ci
from agents.benchmarks.config import REFERENCE_ONLY, BenchConfig
from agents.benchmarks.files import versions
from agents.benchmarks.mechanism import MECHANISM, mechanism
from agents.benchmarks.runner import episode_seeds
from agents.registry import is_adaptive, make_allocator
from agents.rounds import RoundLoop, plan_step
from trainers.run.run_files import RunBeliefs, RunRecord, RunSettings, finite_or_none, runs_of

__all__ = [
    "Belief",
    "FromRunResult",
    "SimSetup",
    "Truth",
    "competition_baseline",
    "fit_truth",
    "live_figures",
    "main",
    "run_belief",
    "run_from_runs",
    "sim_setup",
    "simulate",
]

#: Each mechanism figure's live counterpart in ``metrics.jsonl``.
LIVE_KEYS = {
    "gradient_rollouts": "gradient_rollouts",
    "informative_frac": "informative_frac",
    "informative_prompts": "informative_prompts",
}

#: What every row's simulation leaves out (said in the output).
HISTORY_NOTE = (
    "per-prompt history ignored: live, a revisited prompt's prior also carried its own "
    "discounted evidence; the simulated belief is the base prior alone"
)


def _beta_text(a: float, b: float) -> str:
    return f"Beta({a:.3g}, {b:.3g})"


@dataclass(frozen=True)
class Truth:
    """Pass rates fitted to a run's belief store: a prompt of group ``groups[k]`` (drawn with
    probability ``weights[k]``) has pass rate p ~ Beta(``alpha[k]``, ``beta[k]``)."""

    groups: tuple[str | None, ...]
    weights: tuple[float, ...]
    alpha: tuple[float, ...]
    beta: tuple[float, ...]
    notes: tuple[str, ...] = ()

    def describe(self) -> str:
        """``Beta(a, b)``, or the groups with their shares."""
        if len(self.groups) == 1:
            return _beta_text(self.alpha[0], self.beta[0])
        return " + ".join(
            f"{w:.2f}·{_beta_text(a, b)}[{g}]"
            for g, w, a, b in zip(self.groups, self.weights, self.alpha, self.beta, strict=True)
        )


@dataclass(frozen=True)
class Belief:
    """The prior the run's allocator saw for a new prompt of each truth group."""

    alpha: tuple[float, ...]
    beta: tuple[float, ...]
    description: str
    notes: tuple[str, ...] = ()


def fit_truth(beliefs: RunBeliefs) -> Truth:
    """The Beta-binomial maximum-likelihood fit of the store's counts, per group when the run
    grouped its beliefs (groups in the store's proportions). Where the file records when each
    prompt was last seen, each prompt's counts enter as observed then, the prompt weighted by
    ``decay ** age`` (the belief store's ``weighted`` rule: old prompts say less about the pass
    rates at the end of the run, but their rollouts keep what they say about the spread);
    files written before that read the counts discounted to their last visit as observations."""
    s, f = beliefs.successes, beliefs.failures
    if np.count_nonzero(s + f > 0) < 2:
        raise ValueError(
            f"the belief store holds the evidence of {int(np.count_nonzero(s + f > 0))} "
            "prompts: a fit needs at least 2"
        )
    w = np.ones_like(s)
    if beliefs.seen is not None and beliefs.step is not None and beliefs.decay is not None:
        w = beliefs.decay ** np.maximum(beliefs.step - beliefs.seen, 0.0)
        if np.count_nonzero((s + f > 0) & (w > 0)) < 2:
            w = np.ones_like(s)

    def fit(rows: Any) -> tuple[float, float]:
        return fit_beta_binomial(s[rows], f[rows], weights=w[rows])

    whole = fit(slice(None))
    notes = []
    if beliefs.seen is None:
        notes.append(
            "beliefs.json does not record when each prompt was last seen (written before "
            "2026-12-06): every prompt's counts weigh the same in the fit, however old"
        )
    off = np.maximum(np.abs(s - np.round(s)), np.abs(f - np.round(f)))  # [P]
    discounted = int(np.count_nonzero(off > 0.01))
    if discounted:
        notes.append(
            f"{discounted} of {s.size} prompts hold discounted counts (earlier visits scaled by "
            "decay); the fit reads them as observations, which leans it toward a more "
            "concentrated Beta than the pass rates had"
        )
    keys = sorted(set(beliefs.groups), key=lambda g: (g is None, str(g)))
    if keys == [None]:
        return Truth((None,), (1.0,), (whole[0],), (whole[1],), tuple(notes))
    index = {k: i for i, k in enumerate(keys)}
    group = np.array([index[g] for g in beliefs.groups])  # [P]
    weights = np.bincount(group, minlength=len(keys)) / group.size  # [K]
    alpha, beta = [], []
    for k, key in enumerate(keys):
        rows = group == k
        if np.count_nonzero(s[rows] + f[rows] > 0) >= 2:
            a, b = fit(rows)
        else:
            a, b = whole
            notes.append(f"group {key}: under 2 prompts of evidence, the whole store's fit")
        alpha.append(a)
        beta.append(b)
    return Truth(
        tuple(keys), tuple(float(w) for w in weights), tuple(alpha), tuple(beta), tuple(notes)
    )


def run_belief(settings: RunSettings, beliefs: RunBeliefs, truth: Truth) -> Belief:
    """The base prior the run's allocator saw for a new prompt of each truth group."""
    fixed = (settings.prior_alpha, settings.prior_beta)
    K = len(truth.groups)
    if settings.belief_prior != "fitted":
        return Belief((fixed[0],) * K, (fixed[1],) * K, f"fixed {_beta_text(*fixed)}")
    whole = beliefs.group_priors.get("*") or beliefs.fitted_prior
    notes = []
    if whole is None:
        whole = fixed
        notes.append(
            "no fitted prior recorded (the store never had enough prompts to fit): the fixed "
            "prior, as the run used"
        )
    priors = [
        beliefs.group_priors.get(key, whole) if key is not None else whole for key in truth.groups
    ]
    if len(set(priors)) == 1:
        text = f"fitted {_beta_text(*priors[0])}"
    else:
        text = "fitted per group: " + ", ".join(
            f"{g}: {_beta_text(*p)}" for g, p in zip(truth.groups, priors, strict=True)
        )
    return Belief(tuple(p[0] for p in priors), tuple(p[1] for p in priors), text, tuple(notes))


@dataclass(frozen=True)
class SimSetup:
    """Everything one run's simulation needs (picklable, for worker processes)."""

    spec: str
    kwargs: dict[str, Any]
    params: am.AllocationParams
    truth: Truth
    belief: Belief
    adaptive: bool

    @property
    def reveal(self) -> bool:
        """Whether the allocator reads the hidden pass rates (``oracle``)."""
        return self.spec in REFERENCE_ONLY


def sim_setup(run: RunRecord) -> SimSetup:
    """The simulation of ``run``: truth, belief, and the allocation setting as the trainer builds
    it. Raises when the run's allocator or setting cannot be built here."""
    s = run.settings
    truth = fit_truth(run.beliefs)
    belief = run_belief(s, run.beliefs, truth)
    adaptive = is_adaptive(s.allocator)
    questions = s.pool_size if s.pool_size is not None and adaptive else s.batch_size
    plan = plan_step(  # the trainer's plan of a step (agents.rounds), over the whole batch
        budget=s.budget,
        batch=s.batch_size,
        questions=questions,
        adaptive=adaptive,
        pilot=s.pilot,
        pilot_threshold=s.pilot_threshold,
        max_group=s.max_group,
        utility=s.utility,
        round_size=s.round_size,
        rounds=s.rounds,
        round_schedule=s.round_schedule,
        allocator=s.allocator,
    )
    params = plan.params(belief.alpha[0], belief.beta[0])
    setup = SimSetup(s.allocator, dict(s.allocator_kwargs), params, truth, belief, adaptive)
    make_allocator(setup.spec, setup.params, **setup.kwargs)  # fails here, not in a worker
    return setup


def simulate(setup: SimSetup, episodes: list[int], master_seed: int) -> dict[str, list[float]]:
    """Run the episodes ``episodes`` of ``setup``: per episode, the mechanism figures of its final
    counts and its decisions. Episode i draws its groups, pass rates and outcomes from
    ``episode_seeds(master_seed, i)``, so every run sees the same random numbers."""
    allocator = make_allocator(setup.spec, setup.params, **setup.kwargs)
    base = setup.params
    Q = base.num_questions
    weights = np.asarray(setup.truth.weights)  # [K]
    ta, tb = np.asarray(setup.truth.alpha), np.asarray(setup.truth.beta)  # [K]
    ba, bb = np.asarray(setup.belief.alpha), np.asarray(setup.belief.beta)  # [K]
    shared = bool(np.all(ba == ba[0]) and np.all(bb == bb[0]))
    out: dict[str, list[float]] = {k: [] for k in (*MECHANISM, "decisions")}
    for i in episodes:
        env_seed, alloc_seed = episode_seeds(master_seed, i)
        rng = np.random.default_rng(env_seed)
        g = rng.choice(weights.size, size=Q, p=weights)  # [Q]
        p = rng.beta(ta[g], tb[g])  # [Q]
        params = (
            base
            if shared
            else base.replace(prior_alpha=tuple(ba[g].tolist()), prior_beta=tuple(bb[g].tolist()))
        )
        loop = RoundLoop(
            params,
            functools.partial(rng.binomial, p=p),  # generate and score: a binomial draw
            allocator=allocator,
            seed=alloc_seed,
            name=setup.spec,
            truth=p if setup.reveal else None,
        )
        state = loop.run()
        for key, value in mechanism(state.successes, state.failures).items():
            out[key].append(float(value))
        out["decisions"].append(float(loop.decisions))
    return out


def evidence_steps(prompts: int, questions: float, decay: float) -> int:
    """The last steps a belief store's evidence comes from (0: all steps).

    ``beliefs.json`` holds each prompt's counts as of its last visit, so its ``prompts`` were
    last seen over about one pass, ``prompts / questions`` steps (``questions`` prompts a step);
    a prompt seen several times carries its earlier visits, discounted, over about the store's
    memory, 1 / (1 − decay) steps. The larger of the two; all steps when nothing decays.

    >>> evidence_steps(50_000, 64, 0.95), evidence_steps(500, 64, 0.95), evidence_steps(9, 3, 1.0)
    (782, 20, 0)
    """
    if decay >= 1.0:
        return 0
    one_pass = math.ceil(prompts / max(questions, 1.0) - 1e-9)
    return max(one_pass, math.ceil(1.0 / (1.0 - decay) - 1e-9))


def live_figures(metrics: list[dict[str, Any]], last: int) -> dict[str, Any]:
    """The live mechanism figures per step over the last ``last`` steps (0: all): mean and 95 %
    CI of each, and the number of steps. ``informative_prompts`` is derived from the fraction
    and ``questions`` in metrics written before it was logged."""
    rows = metrics[-last:] if last else metrics
    out: dict[str, Any] = {"steps": len(rows)}
    for key, live_key in LIVE_KEYS.items():
        values = []
        for m in rows:
            v = finite_or_none(m.get(live_key))
            if v is None and key == "informative_prompts":
                frac, q = (
                    finite_or_none(m.get("informative_frac")),
                    finite_or_none(m.get("questions")),
                )
                v = None if frac is None or q is None else frac * q
            if v is not None:
                values.append(v)
        out[key] = _figure(values)
    return out


def _figure(values: list[float]) -> dict[str, float | None]:
    """Mean and CI half-width of ``values`` (None where undefined)."""
    if not values:
        return {"mean": None, "ci95": None}
    mean, ci = mean_ci(values)
    return {"mean": mean, "ci95": None if math.isnan(ci) else ci}


@dataclass
class FromRunResult:
    """What ``run_from_runs`` returns: one row per run, per entrant and per ranking check."""

    runs: list[dict[str, Any]]
    entrants: list[dict[str, Any]]
    rankings: list[dict[str, Any]]
    notes: list[str]
    field_report: list[dict[str, Any]] = field(default_factory=list)
    run_dir: Path | None = None
    markdown: str = field(default="", repr=False)


def _labels(records: list[tuple[str, str, RunRecord]]) -> None:
    """Give plain runs unique entrant names (``parent/name`` where names collide)."""
    names = [r.entrant for kind, _, r in records if kind == "run"]
    for kind, _, r in records:
        if kind == "run" and names.count(r.entrant) > 1:
            r.entrant = f"{r.path.parent.name}/{r.path.name}"


def competition_baseline(config: dict[str, Any], present: list[str]) -> str | None:
    """The run-directory name of a competition's baseline among the entrants ``present``: its
    config's ``baseline``, else ``uniform``, else its first entrant (``adaroll compete``'s
    rule); None when that entrant has no run here."""
    named = [e["name"] for e in config.get("resolved_entrants") or [] if isinstance(e, dict)]
    named = named or [s.strip() for s in str(config.get("allocators") or "").split(",")]
    base = config.get("baseline") or ("uniform" if "uniform" in named else None)
    base = base or (named[0] if named and named[0] else (present[0] if present else None))
    directory = None if base is None else str(base).replace(":", "_").replace("/", "_")
    return directory if directory in present else None


def _gather(
    cfg: BenchConfig,
) -> tuple[list[tuple[str, str, RunRecord]], list[str], dict[str, str | None]]:
    """(kind, comparison, run) for every run under ``cfg.from_run``, what was skipped, and each
    competition's baseline (``competition_baseline``)."""
    records: list[tuple[str, str, RunRecord]] = []
    notes: list[str] = []
    baselines: dict[str, str | None] = {}
    names = [Path(d).name for d in cfg.from_run]
    for d in cfg.from_run:
        kind, runs, skipped = runs_of(d)
        name = Path(d).name if names.count(Path(d).name) == 1 else d
        comparison = name if kind == "competition" else "runs"
        records.extend((kind, comparison, r) for r in runs)
        notes.extend(f"{Path(d).name}: skipped {s}" for s in skipped)
        if kind == "competition":
            config = json.loads((Path(d) / "config.json").read_text())
            present = list(dict.fromkeys(r.entrant for r in runs))
            baselines[comparison] = competition_baseline(config, present)
    _labels(records)
    return records, notes, baselines


def _chunks(n_runs: int, episodes: int, workers: int) -> list[list[int]]:
    parts = max(1, math.ceil(2 * workers / max(n_runs, 1)))
    size = max(1, math.ceil(episodes / parts))
    return [list(range(a, min(episodes, a + size))) for a in range(0, episodes, size)]


def _simulate_task(task: tuple[int, SimSetup, list[int], int]) -> tuple[int, dict[str, Any]]:
    index, setup, episodes, master = task
    try:
        return index, simulate(setup, episodes, master)
    except Exception as exc:  # a plug-in may raise anything: its row says so
        return index, {"error": f"{type(exc).__name__}: {exc}"}


def run_from_runs(cfg: BenchConfig, *, write: bool = True) -> FromRunResult:
    """Simulate every run under ``cfg.from_run`` and compare with its live figures; write
    ``from_run.md`` and ``from_run.json`` into the run directory (if ``write``)."""
    from trainers.experiments.sim_to_real_report import (
        entrant_rows,
        field_rows,
        markdown,
        rankings,
    )

    records, notes, baselines = _gather(cfg)
    rows: list[dict[str, Any]] = []
    setups: dict[int, SimSetup] = {}
    for i, (_, comparison, run) in enumerate(records):
        row = _run_row(cfg, comparison, run)
        try:
            setups[i] = sim_setup(run)
            row.update(_setup_fields(setups[i]))
            row["notes"] += [*setups[i].truth.notes, *setups[i].belief.notes]
        except Exception as exc:  # unknown plug-in, missing sb3 file, invalid setting
            row["error"] = f"cannot simulate: {type(exc).__name__}: {exc}"
        rows.append(row)
    sims = _run_simulations(cfg, setups)
    for i, row in enumerate(rows):
        sim = sims.get(i)
        if sim is not None and "error" in sim:
            row["error"] = f"simulation failed: {sim['error']}"
        elif sim is not None:
            row["predicted"] = {k: _figure(sim[k]) for k in MECHANISM}
            row["decisions"] = float(np.mean(sim["decisions"]))
    entrants = entrant_rows(rows)
    ranks = rankings(entrants)
    notes = [HISTORY_NOTE, *notes]
    result = FromRunResult(rows, entrants, ranks, notes, field_rows(rows, baselines))
    result.markdown = markdown(result, cfg)
    if write:
        result.run_dir = _write(cfg, result)
    return result


def _run_row(cfg: BenchConfig, comparison: str, run: RunRecord) -> dict[str, Any]:
    s = run.settings
    decay = run.beliefs.decay if run.beliefs.decay is not None else s.belief_decay
    sizes = [q for m in run.metrics if (q := finite_or_none(m.get("questions"))) is not None]
    questions = float(np.median(sizes)) if sizes else float(s.batch_size)
    span = evidence_steps(run.beliefs.successes.size, questions, decay)
    last = span if cfg.live_steps is None else cfg.live_steps
    return {
        "comparison": comparison,
        "entrant": run.entrant,
        "seed": run.seed,
        "dir": str(run.path),
        "allocator": s.allocator,
        "allocator_kwargs": s.allocator_kwargs,
        "utility": s.utility,
        "settings": dataclasses.asdict(s),
        "episodes": cfg.episodes,
        "live_last_steps": last,
        "live": live_figures(run.metrics, last),
        "live_all_steps": live_figures(run.metrics, 0),
        "final_pass@1": _final_pass1(run.path),
        "predicted": {k: {"mean": None, "ci95": None} for k in MECHANISM},
        "error": None,
        "notes": list(run.notes),
    }


def _final_pass1(path: Path) -> float | None:
    """The run's last held-out pass@1 (``eval.jsonl``), None without evaluations."""
    from trainers.run.run_files import read_records

    evals = read_records(path / "eval.jsonl")
    return finite_or_none(evals[-1].get("pass@1")) if evals else None


def _setup_fields(setup: SimSetup) -> dict[str, Any]:
    p = setup.params
    return {
        "questions": p.num_questions,
        "budget": p.total_budget,
        "round_size": p.round_size,
        "round_schedule": list(p.round_schedule),
        "pilot": p.pilot,
        "pilot_threshold": p.pilot_threshold,
        "max_group": p.max_group,
        "adaptive": setup.adaptive,
        "truth": setup.truth.describe(),
        "truth_fit": dataclasses.asdict(setup.truth),
        "belief": setup.belief.description,
        "belief_prior": dataclasses.asdict(setup.belief),
    }


def _run_simulations(cfg: BenchConfig, setups: dict[int, SimSetup]) -> dict[int, dict[str, Any]]:
    """Every setup's episodes, in worker processes over chunks of episodes."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    workers = cfg.workers or (os.cpu_count() or 1)
    chunks = _chunks(len(setups), cfg.episodes, workers)
    tasks = [(i, s, eps, cfg.seed) for i, s in setups.items() for eps in chunks]
    done: list[tuple[int, dict[str, Any]]] = []

    def add(index: int, part: dict[str, Any]) -> None:
        done.append((index, part))

    progress = Progress(
        TextColumn("[bold]from-run"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("episode chunks"),
        disable=not cfg.progress,
        transient=True,
    )
    with progress:
        bar = progress.add_task("from-run", total=len(tasks))
        if workers == 1 or len(tasks) <= 1:
            for task in tasks:
                add(*_simulate_task(task))
                progress.advance(bar)
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                futures = {pool.submit(_simulate_task, t): k for k, t in enumerate(tasks)}
                parts: dict[int, tuple[int, dict[str, Any]]] = {}
                for fut in as_completed(futures):
                    parts[futures[fut]] = fut.result()
                    progress.advance(bar)
                done.extend(parts[k] for k in sorted(parts))
    # merged in the tasks' order (episode order), whatever order the workers finished in: the
    # figures are then the same to the last bit with any number of workers
    merged: dict[int, dict[str, Any]] = {}
    for index, part in done:
        if "error" in part:
            merged[index] = part
        elif "error" not in merged.get(index, {}):
            for k, v in part.items():
                merged.setdefault(index, {}).setdefault(k, []).extend(v)
    return merged


def _jsonable(value: Any) -> Any:
    """NaN and infinities as null (strict JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _write(cfg: BenchConfig, result: FromRunResult) -> Path:
    name = cfg.name or time.strftime("from-run-%Y%m%d-%H%M%S")
    run_dir = Path(cfg.out) / name
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=2) + "\n")
    (run_dir / "versions.json").write_text(json.dumps(versions(), indent=2) + "\n")
    record = {
        "runs": result.runs,
        "entrants": result.entrants,
        "rankings": result.rankings,
        "field": result.field_report,
        "notes": result.notes,
    }
    (run_dir / "from_run.json").write_text(json.dumps(_jsonable(record), indent=2) + "\n")
    (run_dir / "from_run.md").write_text(result.markdown)
    return run_dir


def main(cfg: BenchConfig) -> FromRunResult:
    """Run the sim-to-real check, print its tables and say where they were written."""
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console() if Console().is_terminal else Console(width=200)
    result = run_from_runs(cfg)
    console.print(Markdown(result.markdown))
    if result.run_dir is not None:
        console.print(f"run directory: {result.run_dir}")
    return result
