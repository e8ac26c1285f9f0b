"""Tests of agents.bamdp.cache: where tables live, memory before disk before building, damaged
or unwritable files never give a wrong table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agents.bamdp import cache as bamdp_cache
from agents.bamdp.index import TableSpec, build_table


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tmp_path / "cache"))
    bamdp_cache.clear_memory()
    yield
    bamdp_cache.clear_memory()


def test_disk_cache_round_trip(tmp_path):
    spec = TableSpec.make(0.7, 1.3, "hit", 20)
    t1 = bamdp_cache.get_table(spec)
    path = bamdp_cache.table_path(spec)
    assert path.is_file() and str(path).startswith(str(tmp_path))
    bamdp_cache.clear_memory()
    t2 = bamdp_cache.get_table(spec)
    assert np.array_equal(t1.index, t2.index, equal_nan=True)
    path.write_bytes(b"not a table")
    bamdp_cache.clear_memory()
    t3 = bamdp_cache.get_table(spec)  # a damaged file is rebuilt, never trusted
    assert np.array_equal(t1.index, t3.index, equal_nan=True)


def test_cache_dir_order_argument_environment_home(tmp_path, monkeypatch):
    assert bamdp_cache.cache_dir(tmp_path / "given") == tmp_path / "given"
    assert bamdp_cache.cache_dir(str(tmp_path / "given")) == tmp_path / "given"
    assert bamdp_cache.cache_dir() == tmp_path / "cache"  # ADAROLL_CACHE_DIR (the fixture)
    monkeypatch.delenv("ADAROLL_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert bamdp_cache.cache_dir() == tmp_path / "home" / ".cache" / "adaroll"


def test_table_path_is_the_digest_under_tables(tmp_path):
    spec = TableSpec.make(1.0, 2.0, "hit", 6)
    want = tmp_path / "d" / "tables" / f"{spec.digest()}.npz"
    assert bamdp_cache.table_path(spec, tmp_path / "d") == want


def test_saved_file_holds_the_index_and_the_spec():
    spec = TableSpec.make(0.5, 0.5, "informative", 6)
    table = bamdp_cache.get_table(spec)
    with np.load(bamdp_cache.table_path(spec)) as data:
        np.testing.assert_array_equal(data["index"], table.index)
        assert json.loads(str(data["spec"])) == spec.__dict__
    np.testing.assert_array_equal(table.index, build_table(spec).index)


def test_memory_then_disk_then_build(tmp_path):
    spec = TableSpec.make(1.0, 1.0, "hit", 5)
    first = bamdp_cache.get_table(spec)
    assert bamdp_cache.get_table(spec) is first  # memory
    # a (recognisable) file on disk is read rather than rebuilt
    fake = np.full_like(first.index, 7.0)
    np.savez(bamdp_cache.table_path(spec), index=fake)
    bamdp_cache.clear_memory()
    np.testing.assert_array_equal(bamdp_cache.get_table(spec).index, fake)


def test_disk_false_neither_reads_nor_writes(tmp_path):
    spec = TableSpec.make(1.0, 3.0, "hit", 5)
    path = bamdp_cache.table_path(spec)
    path.parent.mkdir(parents=True)
    np.savez(path, index=np.zeros((6, 6)))
    table = bamdp_cache.get_table(spec, disk=False)
    np.testing.assert_array_equal(table.index, build_table(spec).index)
    other = TableSpec.make(1.0, 4.0, "hit", 5)
    bamdp_cache.get_table(other, disk=False)
    assert not bamdp_cache.table_path(other).exists()


def test_an_unwritable_cache_costs_a_rebuild_never_an_error(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "tables").write_text("a file where the folder should be")
    spec = TableSpec.make(2.0, 1.0, "hit", 5)
    table = bamdp_cache.get_table(spec, directory=blocked)
    np.testing.assert_array_equal(table.index, build_table(spec).index)
    assert (blocked / "tables").read_text() == "a file where the folder should be"
    assert list(Path(blocked).iterdir()) == [blocked / "tables"]


def test_memory_is_emptied_past_its_limit(monkeypatch):
    monkeypatch.setattr(bamdp_cache, "_MEMORY_LIMIT", 2)
    specs = [TableSpec.make(1.0, b, "hit", 3) for b in (1.0, 2.0, 3.0)]
    tables = [bamdp_cache.get_table(s, disk=False) for s in specs]
    assert list(bamdp_cache._MEMORY) == [specs[2]]  # the third cleared the first two
    assert bamdp_cache.get_table(specs[2]) is tables[2]
    bamdp_cache.clear_memory()
    assert bamdp_cache._MEMORY == {}
