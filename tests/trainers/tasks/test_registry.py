"""trainers.tasks as a package: ``make_task`` (trainers.tasks.registry), the shipped sample, and
the light import. Each module's own tests are in its mirrored file (test_arithmetic.py,
test_answers.py, test_base.py, test_jsonl.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trainers.tasks import make_task


def test_module_is_light():
    code = (
        "import sys, trainers.tasks; print(*(m in sys.modules for m in "
        "('torch', 'transformers', 'reasoning_gym', 'math_verify', 'sympy')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert out.stdout.split() == ["False"] * 5


def test_sample_task_loads():
    task = make_task("sample", seed=0)
    assert task.name == "sample"
    everything = task.train + task.test
    assert len(everything) == 12 and len(task.test) == 2
    assert sorted(e.id for e in everything) == list(range(12))
    assert all(e.answer and e.prompt for e in everything)
    answers = {e.id: e.answer for e in everything}
    assert answers[0] == "12"  # GSM8K-style "#### 12"
    assert answers[8] == r"\frac{5}{8}"  # MATH-style boxed
    assert {e.level for e in everything} == {0, 1, 2}  # "Level 2" parsed
    ex = everything[0]
    good = task.score([ex, ex, ex], [f"So it is {ex.answer}.", r"\boxed{0}", "none"])
    assert good.rewards.tolist() == [1.0, 0.0, 0.0] and good.errors == 0
    assert make_task("sample", seed=0).test == task.test
    assert {e.id for e in make_task("sample", seed=1).test} != {e.id for e in task.test}


def test_make_task_unknown_name_suggests():
    with pytest.raises(
        ValueError, match=r"unknown task 'arithmetc'.*Did you mean 'arithmetic'"
    ) as e:
        make_task("arithmetc")
    assert "Known: arithmetic, jsonl, rg, sample" in str(e.value)
    with pytest.raises(ValueError, match="Did you mean 'jsonl'"):
        make_task("jsnl:foo.jsonl")


def test_a_missing_task_file_is_a_user_error_the_cli_reports(tmp_path, capsys):
    from trainers import cli
    from trainers.models.paths import MissingPathError

    missing = tmp_path / "nope.jsonl"
    with pytest.raises(MissingPathError) as exc:
        make_task(f"jsonl:{missing}")
    assert isinstance(exc.value, FileNotFoundError) and isinstance(exc.value, ValueError)
    assert str(missing) in str(exc.value) and "check the path" in str(exc.value)
    with pytest.raises(ValueError, match=r"is a directory: name a JSON-lines file"):
        make_task(f"jsonl:{tmp_path}")
    argv = ["grpo", "--task", f"jsonl:{missing}", "--steps", "1", "--no-progress"]
    with pytest.raises(SystemExit) as stop:
        cli.main([*argv, "--out", str(tmp_path / "run"), "--device", "cpu"])
    assert stop.value.code == 2
    assert str(missing) in capsys.readouterr().err
