"""Tests of adaroll_env.errors: the closest-name hint, unknown names, imports by path, keyword and
integer checks; every message names what was wrong, the value and the fix."""

from __future__ import annotations

import collections
import os.path
import re

import numpy as np
import pytest

from adaroll_env.errors import check_int, check_keywords, closest, import_object, unknown_name

# --- closest / unknown_name -----------------------------------------------------------------------


def test_closest_picks_the_nearest_known_name_or_none():
    known = ["uniform", "random", "bamdp"]
    assert closest("unifrom", known) == "uniform"
    assert closest("randon", known) == "random"
    # nothing within difflib's 0.5 ratio: no guess rather than a wrong one
    assert closest("zzzz", known) is None
    assert closest("anything", []) is None


def test_unknown_name_message_has_guess_sorted_known_and_fix():
    err = unknown_name("allocator", "randon", ["uniform", "random"], "Register it first.")
    assert isinstance(err, ValueError)
    assert str(err) == (
        "unknown allocator 'randon'. Did you mean 'random'? Known: random, uniform. "
        "Register it first."
    )


def test_unknown_name_without_a_guess_or_a_fix():
    err = unknown_name("env kind", "zzzz", {"sequential": 1, "rounds": 2})
    assert str(err) == "unknown env kind 'zzzz'. Known: rounds, sequential."


# --- import_object --------------------------------------------------------------------------------


def test_import_object_returns_the_attribute():
    assert import_object("os.path:join", "utility") is os.path.join
    # dotted attributes after the colon are followed one by one
    got = import_object("collections:OrderedDict.fromkeys", "utility")
    assert got == collections.OrderedDict.fromkeys


@pytest.mark.parametrize("path", ["os.path", ":join", "os.path:"])
def test_import_object_needs_module_colon_name(path):
    with pytest.raises(ValueError) as info:
        import_object(path, "utility")
    msg = str(info.value)
    assert msg.startswith(f"utility path {path!r} is not of the form 'package.module:name'")
    assert "write the module path, a colon, then the attribute name" in msg


def test_import_object_names_a_module_that_does_not_import():
    with pytest.raises(ValueError) as info:
        import_object("adaroll_no_such_module_xyz:f", "allocator")
    msg = str(info.value)
    assert "cannot import module 'adaroll_no_such_module_xyz'" in msg
    assert "named by allocator 'adaroll_no_such_module_xyz:f'" in msg
    assert "check the spelling and that the module is on the Python path" in msg
    assert isinstance(info.value.__cause__, ImportError)


def test_import_object_names_a_missing_attribute():
    with pytest.raises(ValueError) as info:
        import_object("os.path:joinn", "utility")
    assert str(info.value) == (
        "module 'os.path' has no attribute 'joinn' (named by utility 'os.path:joinn'): "
        "check the name after the colon"
    )
    with pytest.raises(ValueError, match=r"has no attribute 'OrderedDict\.nope'"):
        import_object("collections:OrderedDict.nope", "utility")


# --- check_keywords -------------------------------------------------------------------------------


def test_check_keywords_accepts_known_keywords():
    assert check_keywords("make", ["budget"], ["budget", "pilot"]) is None
    assert check_keywords("make", [], ["budget"]) is None


def test_check_keywords_names_the_first_unknown_with_a_guess_and_the_list():
    with pytest.raises(TypeError) as info:
        check_keywords("AdaRoll/X-v0", ["pilot", "budgt", "zzzz"], ["budget", "pilot"])
    assert str(info.value) == (
        "AdaRoll/X-v0 got an unexpected keyword argument 'budgt'. Did you mean 'budget'? "
        "Its arguments: budget, pilot."
    )
    with pytest.raises(TypeError) as info:
        check_keywords("f", ["zzzz"], ["budget"])
    assert str(info.value) == "f got an unexpected keyword argument 'zzzz'. Its arguments: budget."


# --- check_int ------------------------------------------------------------------------------------


def test_check_int_returns_a_python_int():
    assert check_int("n", 3, 1) == 3
    got = check_int("n", np.int64(5), 0)
    assert got == 5 and type(got) is int
    assert check_int("pilot", 0, 0) == 0  # the minimum itself is allowed


@pytest.mark.parametrize(
    ("value", "shown"),
    [(True, "True (bool)"), (2.0, "2.0 (float)"), ("3", "'3' (str)"), (None, "None (NoneType)")],
)
def test_check_int_refuses_non_integers_with_type_error(value, shown):
    with pytest.raises(TypeError, match=re.escape(f"budget must be an integer >= 1, got {shown}")):
        check_int("budget", value, 1)


def test_check_int_refuses_values_below_the_minimum():
    with pytest.raises(ValueError) as info:
        check_int("num_questions", 0, 1)
    assert str(info.value) == "num_questions must be an integer >= 1, got 0"
    with pytest.raises(ValueError, match=r"pilot must be an integer >= 0, got -2"):
        check_int("pilot", np.int32(-2), 0)
