"""Run directories that lose nothing: a ``DONE`` marker written last, earlier results set aside.

Every long command (``adaroll grpo``, ``adaroll compete``, ``adaroll train-sb3``) writes into a run
directory. A finished run writes ``DONE`` last (:func:`mark_done`, atomically), so a directory
without it is unfinished whatever else it holds; a fresh start over an earlier run's results moves
them into ``superseded/<UTC time>/`` (:func:`set_aside`) instead of overwriting them.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = ["DONE_FILE", "SUPERSEDED_DIR", "mark_done", "read_done_marker", "set_aside"]

#: the marker a run writes last, once it has finished (JSON: the run's record and the time)
DONE_FILE = "DONE"
#: where a fresh start moves an earlier run's results
SUPERSEDED_DIR = "superseded"


def _utc(fmt: str) -> str:
    return datetime.now(timezone.utc).strftime(fmt)


def mark_done(out: str | Path, record: dict[str, Any]) -> None:
    """Write ``out/DONE`` holding ``record`` and the finishing time, atomically (a half-written
    marker never exists: it is written beside and renamed)."""
    out = Path(out)
    tmp = out / f".{DONE_FILE}.tmp"
    tmp.write_text(json.dumps({**record, "finished": _utc("%Y-%m-%d %H:%M:%S UTC")}) + "\n")
    tmp.replace(out / DONE_FILE)


def read_done_marker(out: str | Path) -> dict[str, Any] | None:
    """The record of ``out/DONE``, or None when the run is not done (no marker, or not JSON)."""
    path = Path(out) / DONE_FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None


def set_aside(out: str | Path, names: Iterable[str]) -> Path | None:
    """Move the entries ``names`` of ``out`` (files or folders) that exist, and a ``DONE``
    marker, into ``out/superseded/<UTC time>/`` (``-2``, ``-3``, ... when that exists already);
    the folder they went to, or None when there was nothing to move."""
    out = Path(out)
    wanted = dict.fromkeys([*names, DONE_FILE])
    found = [out / name for name in wanted if (out / name).exists()]
    if not found:
        return None
    stamp = _utc("%Y%m%d-%H%M%S")
    dest = out / SUPERSEDED_DIR / stamp
    k = 1
    while dest.exists():
        k += 1
        dest = out / SUPERSEDED_DIR / f"{stamp}-{k}"
    dest.mkdir(parents=True)
    for path in found:
        shutil.move(str(path), str(dest / path.name))
    return dest
