"""Every ```python block of README.md runs as printed, each in a fresh interpreter.

A block that cannot run here (it needs a long training run or a download) would carry the marker
comment ``# readme-test: skip``; none does today, and a skipped block is listed in the skip
reason so it cannot hide.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP_MARK = "# readme-test: skip"


def python_blocks() -> list[tuple[int, str]]:
    """``(line, code)`` of each ```python block of README.md."""
    text = (ROOT / "README.md").read_text()
    blocks = []
    for m in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
        blocks.append((text[: m.start()].count("\n") + 1, m.group(1)))
    return blocks


def test_the_readme_has_python_blocks() -> None:
    assert len(python_blocks()) >= 5


@pytest.mark.parametrize(
    ("line", "code"), python_blocks(), ids=lambda x: f"L{x}" if isinstance(x, int) else ""
)
def test_readme_block_runs(line: int, code: str, tiny_model_dir: Path, tmp_path: Path) -> None:
    if SKIP_MARK in code:
        pytest.skip(f"README.md line {line} is marked '{SKIP_MARK}'")
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,  # nothing a snippet writes lands in the checkout
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, (
        f"README.md line {line}:\n{code}\n--- stderr ---\n{done.stderr[-3000:]}"
    )
