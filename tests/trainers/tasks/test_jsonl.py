"""trainers.tasks.jsonl: GSM8K/MATH-style files, their fields, split and every user error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainers.tasks import SAMPLE_PATH, TEST_ID_OFFSET, jsonl_task, make_task


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


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


# --- added with the mirrored layout ----------------------------------------------------------


def test_columns_keep_the_rows_other_scalar_fields(tmp_path):
    row = {"question": "q", "answer": "3", "subject": "algebra", "year": 2020, "hard": True,
           "tags": ["a"], "meta": {"x": 1}}  # fmt: skip
    (ex,) = jsonl_task(_write(tmp_path / "c.jsonl", [json.dumps(row)])).train
    # the question and answer fields are not columns; lists and objects are dropped
    assert ex.columns == {"subject": "algebra", "year": 2020, "hard": True}
    assert ex.group_key("subject") == "algebra"


@pytest.mark.parametrize(
    ("row", "answer", "level"),
    [
        ({"question": "q", "answer": "  the whole text  "}, "the whole text", 0),
        ({"question": "q", "answer": r"it is \boxed{9}"}, "9", 0),
        ({"question": "q", "final_answer": "x #### 5"}, "x #### 5", 0),  # taken whole
        ({"question": "q", "solution": "so\n#### 12", "level": "Level 3"}, "12", 3),
        ({"question": "q", "answer": "1", "level": "hard"}, "1", 0),  # no digits: level 0
    ],
)
def test_reference_answers_and_levels(tmp_path, row, answer, level):
    (ex,) = jsonl_task(_write(tmp_path / "r.jsonl", [json.dumps(row)])).train
    assert (ex.answer, ex.level) == (answer, level)


def test_a_solution_or_answer_without_a_final_answer_says_how_to_mark_it(tmp_path):
    path = _write(tmp_path / "s.jsonl", [json.dumps({"question": "q", "answer": "   "})])
    with pytest.raises(ValueError) as exc:
        jsonl_task(path)
    assert f"{path}, line 1: cannot read a final answer from 'answer'" in str(exc.value)
    assert "end the solution with '#### <answer>' or put the answer in \\boxed{...}" in str(
        exc.value
    )


def test_the_held_out_split_is_seeded_and_never_takes_everything(tmp_path):
    rows = [json.dumps({"question": f"q{i}", "answer": str(i)}) for i in range(10)]
    path = _write(tmp_path / "ten.jsonl", rows)
    a = jsonl_task(path, seed=0, test_fraction=0.3)
    assert len(a.test) == 3 and len(a.train) == 7
    assert sorted(e.id for e in a.train + a.test) == list(range(10))  # ids are line indices
    assert [e.id for e in jsonl_task(path, seed=0, test_fraction=0.3).test] == [
        e.id for e in a.test
    ]
    assert {e.id for e in jsonl_task(path, seed=1, test_fraction=0.3).test} != {
        e.id for e in a.test
    }
    # a tiny fraction still holds one out; a large one leaves one to train on
    assert len(jsonl_task(path, test_fraction=0.01).test) == 1
    assert len(jsonl_task(path, test_fraction=0.99).train) == 1
    one = _write(tmp_path / "one.jsonl", rows[:1])
    assert (len(jsonl_task(one).train), len(jsonl_task(one).test)) == (1, 0)
    assert a.name == "jsonl:ten.jsonl"


def test_completions_are_scored_by_their_extracted_answer(tmp_path):
    rows = [json.dumps({"question": "q", "answer": "#### 1,000"})]
    task = jsonl_task(_write(tmp_path / "m.jsonl", rows), test_fraction=0.0)
    ex = task.train[0]
    texts = ["so $1000.00", r"\boxed{1000} not 5", "it is 1,000 or 999", "about 1e3", ""]
    assert task.score([ex] * 5, texts).rewards.tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert task.describe()["reward"] == "answers_match(extract_answer(completion))"


# --- named columns, groups and math-verify ------------------------------------------------------
SUBJECTS = SAMPLE_PATH.parent / "sample_subjects.jsonl"


def test_named_columns_and_group_from_the_spec():
    task = make_task(f"jsonl:{SUBJECTS}?question=problem&answer=final&group=subject",
                     test_fraction=0.25)  # fmt: skip
    everything = task.train + task.test
    assert len(everything) == 8 and len(task.test) == 2
    by_id = {e.id: e for e in everything}
    assert by_id[0].prompt == r"What is $\frac{1}{4} + \frac{3}{8}$?"
    assert by_id[0].answer == r"\frac{5}{8}" and by_id[5].answer == r"\sqrt{2}"
    # the group's values are the levels, in order: algebra 0, geometry 1, prealgebra 2
    assert {e.columns["subject"]: e.level for e in everything} == {
        "algebra": 0, "geometry": 1, "prealgebra": 2,
    }  # fmt: skip
    assert all("problem" not in e.columns and "final" not in e.columns for e in everything)
    # the same through keyword arguments
    kw = jsonl_task(SUBJECTS, question="problem", answer="final", group="subject",
                    test_fraction=0.25)  # fmt: skip
    assert [(e.id, e.prompt, e.answer, e.level) for e in kw.train] == [
        (e.id, e.prompt, e.answer, e.level) for e in task.train
    ]
    # equivalent forms of the references score 1, others 0 (numbers without math-verify)
    forms = {0: [r"\boxed{0.625}", "5/8", r"so \boxed{\frac{5}{8}}"], 3: ["#### 0.150", "3/20"],
             4: [r"\boxed{\frac{1}{2}}", "0.5"], 1: ["x = 4"]}  # fmt: skip
    for i, texts in forms.items():
        assert task.score([by_id[i]] * len(texts), texts).rewards.tolist() == [1.0] * len(texts)
    assert task.score([by_id[0], by_id[4]], ["0.6", "1/3"]).rewards.tolist() == [0.0, 0.0]


def test_group_levels_follow_natural_order(tmp_path):
    rows = [{"q": f"q{i}", "a": str(i), "lvl": f"Level {n}"} for i, n in enumerate([10, 2, 1, 2])]
    path = _write(tmp_path / "g.jsonl", [json.dumps(r) for r in rows])
    task = make_task(f"jsonl:{path}?question=q&answer=a&group=lvl&test_fraction=0")
    assert [e.level for e in task.train] == [2, 1, 0, 1]  # Level 1 < Level 2 < Level 10
    assert task.train[0].answer == "0" and task.train[0].columns == {"lvl": "Level 10"}


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("?question=text", r"line 1: no column 'text' \(the question column; 8 of 8 rows lack "
                           r"it\); the file's columns: problem, final, subject: name one of "
                           r"them with question="),
        ("?question=problem&answer=solution",
         r"no column 'solution' \(the answer column.*problem, final, subject"),
        ("?question=problem&answer=final&group=topic", r"no column 'topic' \(the group column"),
        ("?question=problem&answer=final&group=final", r"group column 'final' holds str"),
        ("?question=problem&anwser=final", r"unknown option 'anwser': the options are question, "
                                           r"answer, group, test_fraction, math_verify"),
        ("?question=problem&question=x", "sets 'question' twice"),
        ("?question=", "question= names no column"),
        ("?question=problem&answer=final&test_fraction=half", "test_fraction='half' is not"),
        ("?question=problem&answer=final&math_verify=maybe", "write true, false or auto"),
    ],
)  # fmt: skip
def test_named_column_errors_name_the_columns_the_file_has(spec, match):
    with pytest.raises(ValueError, match=match):
        make_task(f"jsonl:{SUBJECTS}{spec}")


def test_math_verify_option(monkeypatch):
    from trainers.tasks import answers

    spec = f"jsonl:{SUBJECTS}?question=problem&answer=final&test_fraction=0"
    on, off = make_task(f"{spec}&math_verify=true"), make_task(f"{spec}&math_verify=false")
    assert "symbolic=False" in off.reward_source and "symbolic=True" in on.reward_source
    root2 = on.train[5]  # \sqrt{2}
    assert off.score([root2], [r"\boxed{2^{1/2}}"]).rewards.tolist() == [0.0]
    if answers._math_verify() is not None:
        assert on.score([root2], [r"\boxed{2^{1/2}}"]).rewards.tolist() == [1.0]
        assert make_task(spec).score([root2], [r"\boxed{2^{1/2}}"]).rewards.tolist() == [1.0]
    monkeypatch.setattr(answers, "_math_verify", lambda: None)
    with pytest.raises(ValueError, match=r"'math' extra"):
        make_task(f"{spec}&math_verify=true")
    assert make_task(spec).score([root2], [r"\boxed{2^{1/2}}"]).rewards.tolist() == [0.0]


def test_the_shipped_sample_matches_equivalent_answers():
    task = make_task("sample", test_fraction=0.0)
    by_id = {e.id: e for e in task.train}
    cases = {0: ["12", "She has 12 now.\n#### 12", r"\boxed{12}", "12.0"],
             8: ["0.625", "5/8", r"\boxed{\frac{5}{8}}", r"\boxed{\dfrac{10}{16}}"],
             9: ["#### 90", "90 litres"]}  # fmt: skip
    for i, texts in cases.items():
        assert task.score([by_id[i]] * len(texts), texts).rewards.tolist() == [1.0] * len(texts)
    wrong = task.score([by_id[0], by_id[8], by_id[8]], ["13", "0.6", r"\boxed{5/9}"])
    assert wrong.rewards.tolist() == [0.0, 0.0, 0.0]
