"""What produced a run, recorded in its directory and checked before runs are compared.

Every start of ``adaroll grpo`` (the first and each resume) appends one record to the run
directory's ``provenance.json``: the git commit of the code and whether its tree had
uncommitted changes, the task spec and seed, the model as given and the sha256 of its weight
files (with the warm start's model card, ``adaroll_model.json``, where there is one: its task,
architecture and recorded weights hash), the library versions, the command line and the date.
The full config is ``config.json`` beside it.

``adaroll compete`` tabulates runs only when they agree on the code, the task and the warm
start (``compare``): a competition resumed after the code changed, or a run directory copied in
from another warm start, is refused with the differing values and the runs that hold them,
unless ``--allow-mixed`` says the mix is intended (the table then lists what differs). The code
is compared by its digest (``code``: the git trees of the packages a run executes) where every
start recorded one, so commits that changed only results, docs or scripts while a competition
ran do not split it; runs recorded before the digest existed are compared by commit.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = ["PROVENANCE_FILE", "compare", "read_provenance", "record_start", "start_record"]

#: the file of a run directory that lists what produced each of its starts
PROVENANCE_FILE = "provenance.json"
#: the fields runs must share to be compared, and how they are named in messages (``code``
#: replaces ``commit`` where every start recorded it)
COMPARED = {"commit": "code commit", "task": "task", "weights_sha256": "warm-start weights"}
CODE = ("code", "code (the packages' git trees)")


def start_record(cfg: Any, *, step: int = 0) -> dict[str, Any]:
    """What produced this start of the run of ``cfg`` (a ``GRPOConfig``), which begins after
    optimizer step ``step`` (0 for a fresh start, the checkpoint's step for a resume)."""
    from trainers.cli import invoked_command  # the top layer, read only when called
    from trainers.models.loading import resolve_model_dir, weights_sha256
    from trainers.models.warm_start_task import git_state
    from trainers.run.grpo_command import versions

    model_dir = resolve_model_dir(cfg.model)
    card_path = model_dir / "adaroll_model.json"
    card: dict[str, Any] | None = None
    if card_path.is_file():
        full = json.loads(card_path.read_text())
        warm = full.get("git") or {}
        card = {
            "task": full.get("task"),
            "architecture": full.get("architecture"),
            "steps": full.get("steps"),
            "weights_sha256": full.get("weights_sha256"),
            "commit": warm.get("commit"),
            "dirty": warm.get("dirty"),
        }
    git = git_state()
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "step": int(step),
        "commit": git["commit"],
        "code": git.get("code"),
        "dirty": git["dirty"],
        "task": f"{cfg.task} (task_seed {cfg.task_seed})",
        "model": cfg.model,
        "weights_sha256": weights_sha256(model_dir, length=64),
        "model_card": card,
        "versions": versions(),
        "command": invoked_command() or "(called from Python)",
    }


def record_start(out: str | Path, record: dict[str, Any]) -> None:
    """Append ``record`` to ``out/provenance.json`` (written whole, atomically)."""
    path = Path(out) / PROVENANCE_FILE
    starts = read_provenance(out) or []
    tmp = path.with_name(f".{PROVENANCE_FILE}.tmp")
    tmp.write_text(json.dumps({"starts": [*starts, record]}, indent=2) + "\n")
    tmp.replace(path)


def read_provenance(out: str | Path) -> list[dict[str, Any]] | None:
    """The start records of a run directory, oldest first; None for a run written before runs
    recorded their provenance."""
    path = Path(out) / PROVENANCE_FILE
    if not path.is_file():
        return None
    starts = json.loads(path.read_text()).get("starts", [])
    return list(starts)


def compare(runs: dict[str, list[dict[str, Any]] | None], *, allow_mixed: bool) -> dict[str, Any]:
    """Check that ``runs`` (label -> start records) share code, task and warm start.

    The code is compared by its digest (``code``) where every start recorded one, else by
    commit. Returns ``{field: [values]}`` for ``commit``, ``task`` and ``weights_sha256`` (one
    value each when they agree; commits may differ where the code does not), ``code`` where it
    was compared, ``dirty`` (labels of runs with a start on a tree with uncommitted changes) and
    ``unknown`` (labels of runs without records). Raises ``ValueError`` naming each differing
    field, its values and the runs holding them, unless ``allow_mixed``."""
    every = [start for starts in runs.values() for start in starts or []]
    by_code = bool(every) and all(start.get("code") for start in every)
    names = dict(COMPARED)
    if by_code:
        del names["commit"]
        names[CODE[0]] = CODE[1]
    values: dict[str, dict[Any, list[str]]] = {f: {} for f in (*COMPARED, *names)}
    dirty: list[str] = []
    unknown: list[str] = []
    for label, starts in runs.items():
        if not starts:
            unknown.append(label)
            continue
        for start in starts:
            for f in values:
                holders = values[f].setdefault(start.get(f), [])
                if label not in holders:
                    holders.append(label)
            if start.get("dirty"):
                dirty.append(label)
    differing = {f: v for f, v in values.items() if f in names and len(v) > 1}
    if differing and not allow_mixed:
        parts = []
        for f, by_value in differing.items():
            listed = "; ".join(
                f"{value!r}: {', '.join(labels[:4])}{' …' if len(labels) > 4 else ''}"
                for value, labels in by_value.items()
            )
            parts.append(f"{names[f]} differs ({listed})")
        raise ValueError(
            "these runs were not produced alike, so their table would compare more than the "
            f"allocators: {' and '.join(parts)}. Rerun the odd ones out under the same code, "
            "task and warm start, or pass --allow-mixed to tabulate them anyway (the table then "
            "lists what differs)"
        )
    return {
        **{f: list(v) for f, v in values.items()},
        "dirty": sorted(set(dirty)),
        "unknown": unknown,
    }
