"""trainers.models as a package: its lazily resolved names. Each room's own tests are in its
mirrored file (test_tiny.py, test_loading.py, test_warm_start.py, test_warm_start_report.py,
test_dropout.py, test_paths.py, test_collate.py, test_prompts.py)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest


def test_every_name_resolves_to_its_rooms_object():
    import trainers.models as models_mod

    homes = {
        "load_policy": "loading",
        "weights_sha256": "loading",
        "TinyConfig": "tiny",
        "build_tiny_tokenizer": "tiny",
        "TINY_METADATA_FILE": "tiny",
        "ensure_tiny_model": "warm_start",
        "tiny_model_dir": "warm_start",
        "disable_dropout": "dropout",
        "DROPOUT_ATTRIBUTES": "dropout",
        "MissingPathError": "paths",
        "cache_dir": "paths",
    }
    for name, room in homes.items():
        module = importlib.import_module(f"trainers.models.{room}")
        assert getattr(models_mod, name) is getattr(module, name), name
    assert set(homes) <= set(models_mod.__all__) <= set(dir(models_mod))
    with pytest.raises(AttributeError, match=r"module 'trainers.models' has no attribute 'nope'"):
        models_mod.nope  # noqa: B018


def test_importing_the_package_loads_nothing_heavy():
    code = (
        "import sys, trainers.models; print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=root)  # fmt: skip
    assert out.stdout.split() == ["False", "False"]
