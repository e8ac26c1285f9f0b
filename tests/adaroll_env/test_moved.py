"""Old module paths (adaroll_env.moved): they warn, name the new path, and are the new module."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

from adaroll_env.moved import alias_modules, moved_modules


def test_an_alias_is_the_new_module_and_warns():
    alias_modules({"adaroll_env.stats_old_name": "adaroll_env.stats"})
    sys.modules.pop("adaroll_env.stats_old_name", None)
    with pytest.warns(
        DeprecationWarning, match="adaroll_env.stats_old_name moved to adaroll_env.stats"
    ):
        old = importlib.import_module("adaroll_env.stats_old_name")
    assert old is importlib.import_module("adaroll_env.stats")
    assert moved_modules()["adaroll_env.stats_old_name"] == "adaroll_env.stats"
    # a name imported through the old path is the same object
    from adaroll_env.stats import mean_ci

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from adaroll_env.stats_old_name import mean_ci as old_mean_ci  # type: ignore[import-not-found]
    assert old_mean_ci is mean_ci


def test_unknown_paths_still_fail():
    alias_modules({"adaroll_env.stats_old_name": "adaroll_env.stats"})  # twice: harmless
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("adaroll_env.no_such_module")


def test_the_shipped_tables_point_at_modules_that_exist():
    import agents
    import trainers

    for new in (*agents.MOVED.values(), *trainers.MOVED.values()):
        assert importlib.util.find_spec(new) is not None, new
