"""Tests of trainers.tasks: arithmetic, answer extraction/matching, pass@k, jsonl, reward funcs."""

from __future__ import annotations

import json
import operator
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from trainers.tasks import (
    ARITHMETIC_LEVELS,
    TEST_ID_OFFSET,
    Example,
    Scores,
    arithmetic_task,
    make_task,
)

OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul}


def _eval(prompt: str) -> int:
    m = re.fullmatch(r"(\d+)([+*-])(\d+)=", prompt)
    assert m is not None, prompt
    return OPS[m.group(2)](int(m.group(1)), int(m.group(3)))


# ---------------------------------------------------------------------------------- arithmetic


def test_arithmetic_deterministic_by_seed():
    a = arithmetic_task(seed=3, num_train=300, num_test=80)
    b = arithmetic_task(seed=3, num_train=300, num_test=80)
    c = arithmetic_task(seed=4, num_train=300, num_test=80)
    assert a.train == b.train and a.test == b.test
    assert [e.prompt for e in a.train] != [e.prompt for e in c.train]


def test_arithmetic_disjoint_ids_levels_and_answers():
    task = make_task("arithmetic", seed=0)
    assert len(task.train) == 2000 and len(task.test) == 400
    assert [e.id for e in task.train] == list(range(2000))
    assert [e.id for e in task.test] == [TEST_ID_OFFSET + j for j in range(400)]
    train_prompts = {e.prompt for e in task.train}
    assert not train_prompts & {e.prompt for e in task.test}
    assert len({e.prompt for e in task.test}) == len(task.test)  # test expressions distinct
    levels = set(ARITHMETIC_LEVELS)
    assert set(Counter(e.level for e in task.test)) == levels
    assert Counter(e.level for e in task.train) == dict.fromkeys(levels, 250)
    for e in task.train + task.test:
        assert e.answer == str(_eval(e.prompt))
        assert " " not in e.prompt and e.prompt.endswith("=")
        assert int(e.answer) >= 0


def test_arithmetic_level_ladder_shapes():
    task = arithmetic_task(seed=1, num_train=800, num_test=80)
    digits = {
        0: {"1+1"},
        1: {"2+1"},
        2: {"2+2"},
        3: {"2-1", "2-2"},
        4: {"1*1"},
        5: {"2*1"},
        6: {"3+3"},
        7: {"3-2", "2*2"},
    }
    for e in task.train + task.test:
        m = re.fullmatch(r"(\d+)([+*-])(\d+)=", e.prompt)
        assert m is not None
        shape = f"{len(m.group(1))}{m.group(2)}{len(m.group(3))}"
        assert shape in digits[e.level], (e, shape)


def test_arithmetic_small_levels_and_subset():
    task = arithmetic_task(seed=0, num_train=50, num_test=10, levels=[0, 4])
    assert {e.level for e in task.train} == {0, 4} == {e.level for e in task.test}
    assert not {e.prompt for e in task.train} & {e.prompt for e in task.test}
    with pytest.raises(ValueError, match="unknown levels"):
        arithmetic_task(levels=[0, 99])
    with pytest.raises(ValueError, match="held-out"):
        arithmetic_task(num_test=100, levels=[0])  # only 20 d+d expressions may be held out


def test_arithmetic_exact_verifier():
    task = arithmetic_task(seed=0, num_train=8, num_test=8)
    ex = Example(id=0, prompt="37+5=", answer="42")
    scores = task.score([ex] * 6, ["42", " 42\n", "042", "42.0", "4 2", ""])
    assert isinstance(scores, Scores)
    assert scores.rewards.dtype == np.float64
    assert scores.rewards.tolist() == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert scores.errors == 0
    with pytest.raises(ValueError, match="one example per"):
        task.score([ex], ["1", "2"])


def test_arithmetic_describe():
    d = arithmetic_task(seed=0, num_train=16, num_test=8).describe()
    assert d["name"] == "arithmetic" and d["num_train"] == 16 and d["num_test"] == 8
    assert sum(d["levels"]["test"].values()) == 8
    assert "exact" in d["reward"]
    json.dumps(d)


def test_module_is_light():
    code = (
        "import sys, trainers.tasks; print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.split() == ["False", "False"]
