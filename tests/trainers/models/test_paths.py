"""trainers.models.paths: the cache root and the error for a missing path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from trainers.models.loading import tiny_model_dir
from trainers.models.paths import CACHE_ENV, MissingPathError, cache_dir


def test_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    from trainers.models.paths import cache_dir

    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    assert tiny_model_dir().parent == tmp_path / "c" / "models"
    monkeypatch.delenv("ADAROLL_CACHE_DIR")
    assert cache_dir() == Path.home() / ".cache" / "adaroll"
    assert cache_dir(tmp_path) == tmp_path


# --- added with the mirrored layout ----------------------------------------------------------


def test_an_explicit_directory_wins_and_an_empty_variable_is_unset(tmp_path, monkeypatch):
    assert CACHE_ENV == "ADAROLL_CACHE_DIR"
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env"))
    assert cache_dir(tmp_path / "given") == tmp_path / "given"
    assert cache_dir(str(tmp_path / "s")) == tmp_path / "s"
    monkeypatch.setenv(CACHE_ENV, "")
    assert cache_dir() == Path.home() / ".cache" / "adaroll"


def test_missing_path_error_is_both_kinds_of_user_error():
    assert issubclass(MissingPathError, FileNotFoundError)
    assert issubclass(MissingPathError, ValueError)
    err = MissingPathError("task file 'x' does not exist")
    assert str(err) == "task file 'x' does not exist"


def test_the_module_imports_only_the_standard_library():
    code = "import sys, trainers.models.paths; print('torch' in sys.modules)"
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=root)  # fmt: skip
    assert out.stdout.split() == ["False"]
