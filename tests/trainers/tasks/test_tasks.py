"""Tests of trainers.tasks: arithmetic, answer extraction/matching, pass@k, jsonl, reward funcs."""

from __future__ import annotations

import itertools
import json
import operator
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from trainers.tasks import (
    ARITHMETIC_LEVELS,
    TEST_ID_OFFSET,
    Example,
    Scores,
    Task,
    answers_match,
    arithmetic_task,
    extract_answer,
    jsonl_task,
    make_task,
    pass_at_k,
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
        cwd=Path(__file__).resolve().parents[3],
    )
    assert out.stdout.split() == ["False", "False"]


# ------------------------------------------------------------------------- answers and pass@k


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"so the answer is \boxed{42}.", "42"),
        (r"\boxed{1} then \boxed{\frac{3}{4}}", r"\frac{3}{4}"),
        (r"\boxed{ {a}+{b} } and more", "{a}+{b}"),
        (r"\boxed {7}", "7"),
        ("He has 3 + 4 = 7 apples.\n#### 7", "7"),
        ("costs 1,000 dollars\n#### 1,000\nthanks", "1,000"),
        ("first 12, then -3.5 remain", "-3.5"),
        ("she ate 3/4 of it", "3/4"),
        ("the total was 1,234, then", "1,234"),
        ("no digits here", None),
        ("", None),
        (r"unclosed \boxed{12 and 5", "5"),
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    ("predicted", "reference"),
    [
        ("42", "42"),
        (" 42 ", "42"),
        ("42.0", "42"),
        ("42.", "42"),
        ("1,000", "1000"),
        ("$1,000.00", "1000"),
        (r"\$18", "18"),
        ("0.75", "3/4"),
        (r"\frac{3}{4}", "3/4"),
        (r"\dfrac{6}{8}", "0.75"),
        ("-5", "-5"),
        ("x+1", "x + 1"),
    ],
)
def test_answers_match_true(predicted, reference):
    assert answers_match(predicted, reference)


@pytest.mark.parametrize(
    ("predicted", "reference"),
    [(None, "42"), ("41", "42"), ("-42", "42"), ("4.2", "42"), ("", "42"), ("x+2", "x+1")],
)
def test_answers_match_false(predicted, reference):
    assert not answers_match(predicted, reference)


def _pass_at_k_brute(n: int, c: int, k: int) -> float:
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(outcomes[i] for i in s) for s in subsets) / len(subsets)


def test_pass_at_k_matches_brute_force():
    for n in range(1, 8):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(_pass_at_k_brute(n, c, k), abs=1e-12)
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(np.int64(4), np.int64(1), 2) == pytest.approx(0.5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "exc", "match"),
    [
        ((0, 0, 1), ValueError, "n >= 1"),
        ((4, 5, 1), ValueError, "c=5"),
        ((4, -1, 1), ValueError, "c=-1"),
        ((4, 1, 0), ValueError, "k=0"),
        ((4, 1, 5), ValueError, "at least k samples"),
        ((4.0, 1, 1), TypeError, "n must be an int"),
        ((4, True, 1), TypeError, "c must be an int"),
    ],
)
def test_pass_at_k_validates(args, exc, match):
    with pytest.raises(exc, match=match):
        pass_at_k(*args)


# ------------------------------------------------------------------------------------- jsonl


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


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


def test_jsonl_fields_template_and_split(tmp_path):
    rows = [
        {"question": "q0", "answer": "work\n#### 1,200"},
        {"prompt": "q1", "final_answer": "7"},
        {"problem": "q2", "solution": r"so \boxed{\sqrt{2}}", "level": 4},
        {"question": "q3", "answer": "5", "topic": "sums"},
    ]
    path = _write(tmp_path / "t.jsonl", [json.dumps(r) for r in rows] + [""])
    task = jsonl_task(path, test_fraction=0.0, template="Q: {question}")
    assert [e.prompt for e in task.train] == ["Q: q0", "Q: q1", "Q: q2", "Q: q3"]
    topic = _write(tmp_path / "topic.jsonl", [json.dumps(rows[3])])
    assert jsonl_task(topic, template="{topic}: {question}").train[0].prompt == "sums: q3"
    assert [(e.id, e.answer, e.level) for e in task.train] == [
        (0, "1,200", 0),
        (1, "7", 0),
        (2, r"\sqrt{2}", 4),
        (3, "5", 0),
    ]
    assert task.test == []
    with pytest.raises(ValueError, match=r"line 1: template .*topic"):
        jsonl_task(path, template="{question} {topic}")
    test_path = _write(tmp_path / "test.jsonl", [json.dumps({"question": "z", "answer": "2"})])
    split = make_task(f"jsonl:{path}", test_path=test_path)
    assert len(split.train) == 4 and [e.id for e in split.test] == [TEST_ID_OFFSET]
    assert split.score(split.test, ["the answer is 2"]).rewards.tolist() == [1.0]
    assert make_task("jsonl", path=path, test_fraction=0.5).describe()["num_test"] == 2


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        ([], "is empty"),
        (["", "  "], "is empty"),
        (['{"question": "a", "answer": "1"}', "{not json"], r"line 2: invalid JSON"),
        (["[1, 2]"], r"line 1: expected a JSON object"),
        (['{"answer": "1"}'], r"line 1: no question field .*add one of question, prompt, problem"),
        (['{"question": "a"}'], r"line 1: no answer field .*add one of answer"),
        (['{"problem": "a", "solution": "no final answer"}'], r"line 1: cannot read"),
    ],
)
def test_jsonl_errors(tmp_path, lines, match):
    path = _write(tmp_path / "bad.jsonl", lines)
    with pytest.raises(ValueError, match=match) as info:
        jsonl_task(path)
    assert "bad.jsonl" in str(info.value)


def test_jsonl_missing_file_and_bad_fraction(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.jsonl.*does not exist"):
        make_task(f"jsonl:{tmp_path / 'nope.jsonl'}")
    path = _write(tmp_path / "ok.jsonl", ['{"question": "a", "answer": "1"}'] * 3)
    with pytest.raises(ValueError, match=r"test_fraction=1\.5"):
        jsonl_task(path, test_fraction=1.5)
    with pytest.raises(ValueError, match="needs a file"):
        make_task("jsonl")


# ------------------------------------------------------------------ reward functions, errors


EX = [Example(0, "1+1=", "2", 0), Example(1, "2+2=", "4", 1), Example(2, "3+3=", "6", 2)]


def test_trl_reward_funcs_summed_with_columns():
    seen: dict[str, Any] = {}

    def correct(prompts, completions, completion_ids=None, answer=None, **kwargs):
        seen.update(prompts=prompts, ids=completion_ids, answer=answer, **kwargs)
        return [1.0 if c == a else 0.0 for c, a in zip(completions, answer, strict=True)]

    def short(prompts, completions, **kwargs):
        return [0.5 if len(c) == 1 else None for c in completions]

    task = arithmetic_task(num_train=8, num_test=8, reward_funcs=[correct, short])
    scores = task.score(EX, ["2", "5", "66"], completion_ids=[[1], [2], [3, 3]])
    assert scores.rewards.tolist() == [1.5, 0.5, 0.0] and scores.errors == 0
    assert seen == {
        "prompts": ["1+1=", "2+2=", "3+3="],
        "ids": [[1], [2], [3, 3]],
        "answer": ["2", "4", "6"],
        "level": [0, 1, 2],
        "id": [0, 1, 2],
    }
    assert "correct + short" in task.describe()["reward"]
    single = make_task("arithmetic", num_train=8, num_test=8, reward_funcs=short)
    assert single.score(EX, ["2", "44", "6"]).rewards.tolist() == [0.5, 0.0, 0.5]


def test_trl_reward_func_raising_counts_errors():
    def ok(prompts, completions, **kwargs):
        return [1.0] * len(completions)

    def broken(prompts, completions, **kwargs):
        raise RuntimeError("boom")

    task = Task("t", EX, [], reward_funcs=[ok, broken])
    scores = task.score(EX, ["2", "4", "6"])
    assert scores.rewards.tolist() == [0.0, 0.0, 0.0] and scores.errors == 3


def test_trl_reward_func_wrong_length():
    def short_list(prompts, completions, **kwargs):
        return [1.0]

    task = Task("t", EX, [], reward_funcs=short_list)
    with pytest.raises(ValueError, match=r"'short_list' returned 1 rewards for 3 completions"):
        task.score(EX, ["2", "4", "6"])
    with pytest.raises(TypeError, match="must be callables"):
        Task("t", EX, [], reward_funcs=[short_list, "nope"])  # type: ignore[list-item]


def test_raising_verifier_counted():
    def picky(completion: str, example: Example) -> float:
        if completion == "boom":
            raise ValueError("cannot parse")
        return float(completion.strip() == example.answer)

    task = Task("t", EX, [], verifier=picky)
    scores = task.score(EX, ["2", "boom", "6"])
    assert scores.rewards.tolist() == [1.0, 0.0, 1.0] and scores.errors == 1


def test_task_validates_ids():
    with pytest.raises(ValueError, match="both train and test"):
        Task("t", EX, EX[:1], verifier=lambda c, e: 0.0)
    with pytest.raises(ValueError, match="duplicate train ids"):
        Task("t", [EX[0], EX[0]], [], verifier=lambda c, e: 0.0)
    with pytest.raises(ValueError, match="no verifier"):
        Task("t", EX, [])


def test_make_task_unknown_name_suggests():
    with pytest.raises(
        ValueError, match=r"unknown task 'arithmetc'.*Did you mean 'arithmetic'"
    ) as e:
        make_task("arithmetc")
    assert "Known: arithmetic, jsonl, sample" in str(e.value)
    with pytest.raises(ValueError, match="Did you mean 'jsonl'"):
        make_task("jsnl:foo.jsonl")


def test_arithmetic_pools_split_the_non_test_expressions() -> None:
    rl = make_task("arithmetic", seed=0, num_train=3000)
    warm = make_task("arithmetic", seed=0, num_train=3000, pool="warmup")
    both = make_task("arithmetic", seed=0, num_train=3000, pool="all")
    rl_p, warm_p = {e.prompt for e in rl.train}, {e.prompt for e in warm.train}
    assert not rl_p & warm_p  # the warm start never sees a GRPO prompt
    assert [e.prompt for e in rl.test] == [e.prompt for e in warm.test]  # one held-out split
    all_p = {e.prompt for e in both.train}
    assert all_p & rl_p and all_p & warm_p
    with pytest.raises(ValueError, match="pool must be"):
        make_task("arithmetic", pool="sft")


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


def test_jsonl_line_that_is_not_utf8_names_the_file_and_line(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"question": "a", "answer": "1"}\n{"question": "caf\xe9", "answer": "2"}\n')
    with pytest.raises(ValueError, match=r"latin1\.jsonl, line 2: not UTF-8"):
        jsonl_task(path)


def test_jsonl_line_numbers_count_every_line_ending(tmp_path):
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(b'{"question": "a", "answer": "1"}\r\n\r\n{"question": "b"}\r\n')
    with pytest.raises(ValueError, match=r"crlf\.jsonl, line 3: no answer field"):
        jsonl_task(path)
