"""Reading the run directories of ``adaroll grpo`` and ``adaroll compete`` (a file-format contract).

``agents`` never imports ``trainers``, so the files a training run writes are read here as plain
JSON, by their documented keys, with the defaults of fields older runs lack:

- a **run directory** holds ``config.json`` (the run's ``GRPOConfig``: allocator, allocator_kwargs,
  utility, batch_size B, group_size G, budget N (default G·B), round_size, rounds, round_schedule,
  pool_size, pilot, pilot_threshold, max_group, belief_prior, prior_alpha, prior_beta,
  belief_group, belief_decay),
  ``metrics.jsonl`` (one step report per line) and, once the run has finished, ``beliefs.json`` (the
  belief store: ``ids``, ``rates``, ``rollouts`` (discounted counts), ``successes``/``failures``
  (discounted), ``groups``, ``fitted_prior``, ``group_priors``, ``fixed_prior``, ``decay``; runs
  written before the store gained counts and groups hold only ``ids``, ``rates``, ``rollouts`` and
  ``fitted_prior``: their successes are rates × rollouts);
- a **competition directory** holds ``config.json`` and ``runs/<entrant>/seed<k>/``, each a run
  directory.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from adaroll_env.priors import resolve_belief_group

__all__ = [
    "RunBeliefs",
    "RunRecord",
    "RunSettings",
    "read_beliefs",
    "read_run",
    "read_settings",
    "runs_of",
]

#: What a run directory holds (``beliefs.json`` is written when the run finishes).
RUN_FILES = ("config.json", "metrics.jsonl", "beliefs.json")

#: config.json fields a run may lack (written before version 3) and their defaults.
OPTIONAL_SETTINGS: dict[str, Any] = {
    "allocator_kwargs": None,
    "utility": "informative",
    "budget": None,
    "round_size": None,
    "rounds": None,
    "round_schedule": None,
    "pool_size": None,
    "pilot": 0,
    "pilot_threshold": 0.0,
    "max_group": None,
    "belief_prior": "fixed",
    "prior_alpha": 1.0,
    "prior_beta": 1.0,
    "belief_group": "none",
    "belief_decay": 0.95,
}


@dataclass(frozen=True)
class RunSettings:
    """The allocation settings of one training run, from its ``config.json``."""

    allocator: str
    allocator_kwargs: dict[str, Any]
    utility: str
    batch_size: int
    group_size: int
    budget: int
    round_size: int | None
    rounds: int | None
    round_schedule: str | None
    pool_size: int | None
    pilot: int
    max_group: int | None
    belief_prior: str
    prior_alpha: float
    prior_beta: float
    belief_group: str
    belief_decay: float
    pilot_threshold: float = 0.0


@dataclass(frozen=True)
class RunBeliefs:
    """The belief store at the end of a run, from its ``beliefs.json``.

    Per prompt (one order): discounted ``successes`` and ``failures``, and the belief ``groups``
    (a string key, or None when the run did not group beliefs); ``seen``, the step each prompt's
    counts were last updated, and ``step``, the run's last step (None: a file written before
    they were recorded). ``group_priors`` maps a group to
    its fitted Beta (``"*"``: the whole store); ``old_format`` marks a file written before the
    store recorded counts and groups (successes derived as rates × rollouts).
    """

    successes: NDArray[np.float64]
    failures: NDArray[np.float64]
    groups: tuple[str | None, ...]
    fitted_prior: tuple[float, float] | None
    group_priors: dict[str, tuple[float, float]]
    fixed_prior: tuple[float, float] | None
    decay: float | None
    old_format: bool
    seen: NDArray[np.float64] | None = None
    step: int | None = None


@dataclass
class RunRecord:
    """One run directory: where it is, what it is called, its settings, metrics and beliefs."""

    path: Path
    entrant: str
    seed: int | None
    settings: RunSettings
    metrics: list[dict[str, Any]]
    beliefs: RunBeliefs
    notes: list[str] = field(default_factory=list)


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno})") from None


def read_settings(config: dict[str, Any], where: Path) -> RunSettings:
    """The allocation settings of a run's ``config.json`` (already parsed), checked."""
    if not isinstance(config, dict):
        raise ValueError(f"{where} must hold a JSON object (a GRPOConfig), got {type(config)}")
    missing = [k for k in ("allocator", "batch_size", "group_size") if k not in config]
    if missing:
        raise ValueError(
            f"{where} lacks {missing}: it is not the config.json of an adaroll grpo run"
        )
    c = {**config, **{k: config.get(k, v) for k, v in OPTIONAL_SETTINGS.items()}}
    kwargs = c["allocator_kwargs"]
    if isinstance(kwargs, str):
        try:
            kwargs = json.loads(kwargs)
        except json.JSONDecodeError:
            raise ValueError(f"{where}: allocator_kwargs {kwargs!r} is not valid JSON") from None
    if kwargs is not None and not isinstance(kwargs, dict):
        raise ValueError(f"{where}: allocator_kwargs must be a JSON object, got {kwargs!r}")
    B, G = int(c["batch_size"]), int(c["group_size"])
    budget = int(c["budget"]) if c["budget"] is not None else B * G
    max_group = None if c["max_group"] is None else int(c["max_group"])
    pool = None if c["pool_size"] is None else int(c["pool_size"])
    pilot = c["pilot"]
    if pilot is None:  # unset (a hand-written config): what the trainer ran, resolved
        from agents.rounds import resolve_pilot

        pilot = resolve_pilot(
            None,
            str(c["allocator"]).strip(),
            budget=budget,
            questions=pool if pool is not None else B,
            round_size=c["round_size"],
            rounds=c["rounds"],
            round_schedule=c["round_schedule"],
        )
    return RunSettings(
        allocator=str(c["allocator"]).strip(),
        allocator_kwargs=dict(kwargs or {}),
        utility=str(c["utility"] or "informative"),
        batch_size=B,
        group_size=G,
        budget=budget,
        round_size=None if c["round_size"] is None else int(c["round_size"]),
        rounds=None if c["rounds"] is None else int(c["rounds"]),
        round_schedule=None if c["round_schedule"] is None else str(c["round_schedule"]),
        pool_size=pool,
        pilot=int(pilot),
        max_group=max_group,
        belief_prior=str(c["belief_prior"] or "fixed"),
        prior_alpha=float(c["prior_alpha"] if c["prior_alpha"] is not None else 1.0),
        prior_beta=float(c["prior_beta"] if c["prior_beta"] is not None else 1.0),
        belief_group=resolve_belief_group(
            str(c["belief_group"] or "none"), str(c["belief_prior"] or "fixed")
        ),
        belief_decay=float(c["belief_decay"] if c["belief_decay"] is not None else 0.95),
        pilot_threshold=float(c["pilot_threshold"] or 0.0),
    )


def _pair(value: Any, where: str) -> tuple[float, float] | None:
    if value is None:
        return None
    try:
        a, b = (float(x) for x in value)
    except (TypeError, ValueError):
        raise ValueError(f"{where} must be a pair [a, b] or null, got {value!r}") from None
    return a, b


def read_beliefs(data: dict[str, Any], where: Path) -> RunBeliefs:
    """A run's ``beliefs.json`` (already parsed), in either format, checked."""
    if not isinstance(data, dict) or "rollouts" not in data:
        raise ValueError(
            f"{where} lacks 'rollouts': it is not the beliefs.json of an adaroll grpo run"
        )
    n = np.asarray(data["rollouts"], dtype=np.float64).reshape(-1)
    old = "successes" not in data or "failures" not in data
    if old:
        if "rates" not in data:
            raise ValueError(f"{where} has neither 'successes'/'failures' nor 'rates'")
        rates = np.asarray(data["rates"], dtype=np.float64).reshape(-1)
        if rates.shape != n.shape:
            raise ValueError(
                f"{where}: 'rates' ({rates.size}) and 'rollouts' ({n.size}) differ in length"
            )
        s = np.where(n > 0, rates * n, 0.0)
        f = n - s
    else:
        s = np.asarray(data["successes"], dtype=np.float64).reshape(-1)
        f = np.asarray(data["failures"], dtype=np.float64).reshape(-1)
        if not (s.shape == f.shape == n.shape):
            raise ValueError(
                f"{where}: 'successes' ({s.size}), 'failures' ({f.size}) and 'rollouts' "
                f"({n.size}) differ in length"
            )
    if np.any(~np.isfinite(s) | ~np.isfinite(f) | (s < 0) | (f < 0)):
        raise ValueError(f"{where}: counts must be finite and >= 0")
    raw_groups = data.get("groups") or [None] * s.size
    if len(raw_groups) != s.size:
        raise ValueError(f"{where}: 'groups' ({len(raw_groups)}) and counts ({s.size}) differ")
    groups = tuple(None if g is None else _group_key(g) for g in raw_groups)
    priors = {
        str(k): p
        for k, v in (data.get("group_priors") or {}).items()
        if (p := _pair(v, f"{where}: group_priors[{k!r}]")) is not None
    }
    decay = data.get("decay")
    seen = None
    if data.get("seen") is not None:
        seen = np.asarray(data["seen"], dtype=np.float64).reshape(-1)
        if seen.shape != s.shape:
            raise ValueError(f"{where}: 'seen' ({seen.size}) and counts ({s.size}) differ")
    step = data.get("step")
    return RunBeliefs(
        successes=s,
        failures=f,
        groups=groups,
        fitted_prior=_pair(data.get("fitted_prior"), f"{where}: fitted_prior"),
        group_priors=priors,
        fixed_prior=_pair(data.get("fixed_prior"), f"{where}: fixed_prior"),
        decay=None if decay is None else float(decay),
        old_format=old,
        seen=seen,
        step=None if step is None else int(step),
    )


def _group_key(value: Any) -> str:
    """A belief group as ``group_priors`` keys it (``str`` of the key; lists as tuples)."""
    return str(tuple(value)) if isinstance(value, list) else str(value)


#: metric names of runs written before version 4 -> today's (one name per metric everywhere)
METRIC_RENAMES = {"trained_rollouts": "gradient_rollouts"}


def renamed(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with the metric names of older runs replaced by today's (``METRIC_RENAMES``).

    >>> renamed({"step": 3, "trained_rollouts": 40})
    {'step': 3, 'gradient_rollouts': 40}
    """
    if not any(old in record for old in METRIC_RENAMES):
        return record
    return {METRIC_RENAMES.get(k, k): v for k, v in record.items()}


def read_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a run's JSONL file (``metrics.jsonl``, ``eval.jsonl``; empty when
    missing): blank lines skipped, a torn last line too (a run killed mid-write leaves one),
    metric names of older runs renamed (``renamed``), and a ``metrics.jsonl`` written before
    steps were numbered from 1 renumbered (step k is the k-th step, as in ``eval.jsonl`` and the
    checkpoint names)."""
    p = Path(path)
    if not p.exists():
        return []
    rows = []
    lines = p.read_text().splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(renamed(json.loads(line)))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            raise ValueError(f"{p}: line {i + 1} is not valid JSON") from None
    if p.name == "metrics.jsonl" and rows and rows[0].get("step") == 0:
        rows = [{**r, "step": r["step"] + 1} for r in rows]
    return rows


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The step reports of ``metrics.jsonl`` (``read_records``)."""
    return read_records(path)


def is_run_dir(path: Path) -> bool:
    """Whether ``path`` looks like a run directory (config.json and metrics.jsonl)."""
    return (path / "config.json").is_file() and (path / "metrics.jsonl").is_file()


def read_run(path: Path, entrant: str | None = None, seed: int | None = None) -> RunRecord:
    """One run directory; raises ``ValueError`` naming the file that is missing or malformed."""
    path = Path(path)
    for name in RUN_FILES:
        if not (path / name).is_file():
            why = (
                "adaroll grpo writes it when the run finishes: finish or resume the run"
                if name == "beliefs.json"
                else "is this a run directory of adaroll grpo?"
            )
            raise ValueError(f"run directory {path} has no {name}: {why}")
    settings = read_settings(_load_json(path / "config.json"), path / "config.json")
    beliefs = read_beliefs(_load_json(path / "beliefs.json"), path / "beliefs.json")
    notes = []
    if beliefs.old_format:
        notes.append("beliefs.json of the older format: successes = rates × rollouts")
    return RunRecord(
        path=path,
        entrant=entrant if entrant is not None else path.name,
        seed=seed if seed is not None else _config_seed(path),
        settings=settings,
        metrics=read_metrics(path / "metrics.jsonl"),
        beliefs=beliefs,
        notes=notes,
    )


def _config_seed(path: Path) -> int | None:
    seed = _load_json(path / "config.json").get("seed")
    return None if seed is None else int(seed)


def _seed_of(name: str) -> int | None:
    tail = name[len("seed") :]
    return int(tail) if name.startswith("seed") and tail.isdigit() else None


def runs_of(path: str | Path) -> tuple[str, list[RunRecord], list[str]]:
    """The runs a directory holds: ``("run", [run], [])`` for a run directory, or
    ``("competition", runs, skipped)`` for a competition directory (its entrants in the order of
    its config, seeds in order; ``skipped`` says which runs were left out and why).

    Raises ``ValueError`` when ``path`` is neither, naming what each kind holds.
    """
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"--from-run {path}: no such directory")
    if is_run_dir(path):
        return "run", [read_run(path)], []
    runs_dir = path / "runs"
    if not ((path / "config.json").is_file() and runs_dir.is_dir()):
        found = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())[:12]
        raise ValueError(
            f"--from-run {path} is neither a run directory of adaroll grpo (config.json, "
            "metrics.jsonl, beliefs.json) nor a competition directory of adaroll compete "
            f"(config.json and runs/<entrant>/seed<k>/); it holds {found or 'nothing'}"
        )
    config = _load_json(path / "config.json")
    order = [
        s.strip().replace(":", "_").replace("/", "_")
        for s in str(config.get("allocators", "")).split(",")
        if s.strip()
    ]
    entrants = sorted(
        (d for d in runs_dir.iterdir() if d.is_dir()),
        key=lambda d: (order.index(d.name) if d.name in order else len(order), d.name),
    )
    runs, skipped = [], []
    for entrant in entrants:
        seeds = sorted(
            (d for d in entrant.iterdir() if d.is_dir() and _seed_of(d.name) is not None),
            key=lambda d: _seed_of(d.name) or 0,
        )
        for d in seeds:
            try:
                runs.append(read_run(d, entrant=entrant.name, seed=_seed_of(d.name)))
            except ValueError as exc:
                skipped.append(f"{entrant.name}/{d.name}: {exc}")
    if not runs:
        raise ValueError(
            f"competition directory {path} has no finished run under runs/<entrant>/seed<k>/ "
            f"(a finished run holds {', '.join(RUN_FILES)})"
            + (f"; skipped: {skipped}" if skipped else "")
        )
    return "competition", runs, skipped


def finite_or_none(value: Any) -> float | None:
    """``value`` as a float, or None when it is missing or not finite."""
    if value is None or isinstance(value, bool):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


#: metrics that measure time (they differ between any two runs, even of the same code)
TIMING_KEYS = ("seconds", "tokens_per_s", "alloc_overhead")


def compare_runs(a: Path, b: Path) -> dict[str, dict[str, Any]]:
    """Per file (``metrics.jsonl``, ``eval.jsonl``) of two run directories: the rows, the values
    compared (timings left out, older metric names renamed) and the keys whose values differ —
    what "the same run, bit for bit" means for a refactor (``scripts/compare_runs.py``)."""
    out: dict[str, dict[str, Any]] = {}
    for name in ("metrics.jsonl", "eval.jsonl"):
        ra, rb = read_metrics(Path(a) / name), read_metrics(Path(b) / name)
        differ: set[str] = set()
        compared = 0
        for x, y in zip(ra, rb, strict=False):
            for key in sorted(set(x) | set(y)):
                if any(t in key for t in TIMING_KEYS):
                    continue
                compared += 1
                if x.get(key) != y.get(key):
                    differ.add(key)
        out[name] = {
            "rows": (len(ra), len(rb)),
            "compared": compared,
            "differ": sorted(differ),
            "identical": not differ and len(ra) == len(rb),
        }
    return out
