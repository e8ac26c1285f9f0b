"""Where the trainer keeps its files, and the error for a path the user named that is missing.

- ``cache_dir()``: the adaroll cache root, ``$ADAROLL_CACHE_DIR`` or ``~/.cache/adaroll`` (the
  same root the BAMDP solver's tables use); the tiny model lives under ``models/``.
- ``MissingPathError``: a model directory or task file that does not exist. It is both a
  ``FileNotFoundError`` and a ``ValueError``, so callers that catch either (the command line turns
  ``ValueError`` into exit status 2) report it as the user's mistake, not a crash.

Only the standard library is imported here.
"""

from __future__ import annotations

import os
from pathlib import Path

#: the environment variable that moves the cache
CACHE_ENV = "ADAROLL_CACHE_DIR"


def cache_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    """The cache root: ``directory`` when given, else ``$ADAROLL_CACHE_DIR``, else
    ``~/.cache/adaroll``.

    >>> cache_dir("/tmp/x").as_posix()
    '/tmp/x'
    """
    if directory is not None:
        return Path(directory)
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "adaroll"


class MissingPathError(FileNotFoundError, ValueError):
    """A file or directory the user named does not exist; the message says which and the fix."""
