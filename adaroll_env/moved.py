"""Old module paths that still import, for one release, with a ``DeprecationWarning``.

Version 4 moved modules into subpackages (``trainers.trainer`` is now ``trainers.grpo.trainer``,
``agents.bandit_values`` is ``agents.bandits.value_tables``, ...). Each package keeps a table of
its old paths, ``{old: new}``, and installs it with ``alias_modules``: importing an old path
warns once, names the new one, and gives the very module object of the new path, so classes,
functions and pickles are the same objects whichever path reached them. No file stays behind at
the old place, so the tree shows only the new layout.

>>> import sys, warnings
>>> alias_modules({"adaroll_env.old_stats": "adaroll_env.stats"})
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     import adaroll_env.old_stats as old
>>> old is sys.modules["adaroll_env.stats"], caught[0].category.__name__
(True, 'DeprecationWarning')
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Mapping, Sequence
from types import ModuleType

__all__ = ["alias_modules", "moved_modules"]


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{self.old} moved to {self.new}: import it from there (the old path will go in "
            "the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(self.new)

    def exec_module(self, module: ModuleType) -> None:  # the new module is already executed
        return None


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of one table, and nothing else."""

    def __init__(self, table: Mapping[str, str]) -> None:
        self.table = dict(table)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = self.table.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(fullname, new))


_TABLE: dict[str, str] = {}


def alias_modules(table: Mapping[str, str]) -> None:
    """Make each old module path of ``table`` import its new path, with a ``DeprecationWarning``.

    Installing the same table twice is harmless. Old paths are looked up before the files on
    ``sys.path`` (a stale ``.pyc`` or a left-over file at an old path cannot shadow the move).
    """
    fresh = {old: new for old, new in table.items() if _TABLE.get(old) != new}
    if not fresh:
        return
    _TABLE.update(fresh)
    sys.meta_path.insert(0, _AliasFinder(fresh))


def moved_modules() -> dict[str, str]:
    """Every old path installed so far, ``{old: new}`` (docs: code layout, moved in version 4)."""
    return dict(_TABLE)
