"""Index tables cached in memory and on disk, so every process reuses what one built.

The cache directory is, in order: the ``cache_dir`` argument, the ``ADAROLL_CACHE_DIR``
environment variable, ``~/.cache/adaroll``. Files are ``tables/<digest>.npz`` (the digest hashes
the spec, the table version and a custom utility's code) written atomically, so concurrent
workers never read half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

from agents.bamdp.index import IndexTable, TableSpec, build_table

_MEMORY: dict[TableSpec, IndexTable] = {}
_MEMORY_LIMIT = 4096


def cache_dir(cache_dir: str | os.PathLike | None = None) -> Path:
    """The directory that holds the cached tables."""
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("ADAROLL_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "adaroll"


def table_path(spec: TableSpec, directory: str | os.PathLike | None = None) -> Path:
    """Where the table of ``spec`` lives on disk."""
    return cache_dir(directory) / "tables" / f"{spec.digest()}.npz"


def get_table(
    spec: TableSpec, *, directory: str | os.PathLike | None = None, disk: bool = True
) -> IndexTable:
    """The table of ``spec``: from memory, else from disk, else built (and saved)."""
    table = _MEMORY.get(spec)
    if table is not None:
        return table
    path = table_path(spec, directory)
    if disk and path.is_file():
        try:
            with np.load(path) as data:
                table = IndexTable(spec, np.array(data["index"]))
        except (OSError, ValueError, KeyError):
            table = None  # a damaged file is rebuilt below
    if table is None:
        table = build_table(spec)
        if disk:
            _save(table, path)
    if len(_MEMORY) >= _MEMORY_LIMIT:
        _MEMORY.clear()
    _MEMORY[spec] = table
    return table


def _save(table: IndexTable, path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp.npz")
        os.close(fd)
        meta = json.dumps(table.spec.__dict__)
        np.savez(tmp, index=table.index, spec=np.array(meta))
        os.replace(tmp, path)
    except OSError:
        # A read-only or full disk costs a rebuild next time, never a wrong table.
        pass


def clear_memory() -> None:
    """Forget the tables held in memory (the disk cache stays)."""
    _MEMORY.clear()
