"""Fixtures of the report tests: a results folder of hand-made files and the page it feeds."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from trainers.reports.data import Data, Output


@pytest.fixture
def report_folder(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Callable[[dict[str, Any]], tuple[Data, Output]]:
    """``make(files)``: writes ``files`` (name -> text, or an object written as JSON) into
    ``results/f`` under ``tmp_path`` and returns its ``Data`` and the ``Output`` of the page the
    test module names in ``PAGE``."""

    def make(files: dict[str, Any]) -> tuple[Data, Output]:
        base = tmp_path / "results" / "f"
        base.mkdir(parents=True, exist_ok=True)
        for name, value in files.items():
            (base / name).write_text(value if isinstance(value, str) else json.dumps(value))
        return Data(tmp_path, "results/f"), Output(tmp_path / "site", request.module.PAGE)

    return make
