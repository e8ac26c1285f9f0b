"""trainers.tasks.reasoning_gym: ``rg:<dataset>`` tasks, their options, splits, levels and scores.

The trainer, compete, live-env and TRL paths that take such a task are in
test_reasoning_gym_paths.py.
"""

from __future__ import annotations

import doctest
import sys

import pytest

pytest.importorskip("reasoning_gym")

from trainers.tasks import TEST_ID_OFFSET, VALIDATION_ID_OFFSET, make_task
from trainers.tasks import reasoning_gym as rgt
from trainers.tasks.base import MissingExtraError

SMALL = {"num_train": 300, "num_validation": 40, "num_test": 80}
#: the datasets verified here and the metadata key their level is read from
VERIFIED = {
    "chain_sum": ("num_terms", "num_digits"),
    "spell_backward": ("word_len",),
    "letter_counting": ("span_length",),
    "count_bits": ("n",),
}
PRINTABLE = {chr(c) for c in range(32, 127)} | {"\n"}


@pytest.mark.parametrize("dataset", sorted(VERIFIED))
def test_verified_datasets_score_their_references_and_grade_levels(dataset: str) -> None:
    task = make_task(f"rg:{dataset}", seed=0, **SMALL)
    train, val, test = task.train, task.validation, task.test
    assert (len(train), len(val), len(test)) == (300, 40, 80)
    # ids: train 0..n-1, test and validation from their offsets
    assert [e.id for e in train] == list(range(300))
    assert [e.id for e in test] == list(range(TEST_ID_OFFSET, TEST_ID_OFFSET + 80))
    assert [e.id for e in val] == list(range(VALIDATION_ID_OFFSET, VALIDATION_ID_OFFSET + 40))
    everything = train + val + test
    # no question twice, within or across splits; all in the tiny tokenizer's characters
    assert len({e.prompt for e in everything}) == len(everything)
    assert all(set(e.prompt + e.answer) <= PRINTABLE for e in everything)
    # the dataset's own scorer: each reference scores 1, another item's answer 0
    scores = task.score(everything, [f"  {e.answer}\n" for e in everything])
    assert scores.rewards.tolist() == [1.0] * len(everything) and scores.errors == 0
    wrong = [e for e in everything if e.answer != everything[0].answer][:20]
    assert task.score(wrong, [everything[0].answer] * len(wrong)).rewards.sum() == 0.0
    # levels: 0-based, no gaps, and never lower for an item harder on every level key
    keys = VERIFIED[dataset]
    assert task.details["level_keys"] == list(keys)
    levels = sorted({e.level for e in everything})
    assert levels == list(range(len(levels))) and len(levels) >= 4
    for a in everything[:60]:
        for b in everything[:60]:
            if all(a.columns[k] <= b.columns[k] for k in keys):
                assert a.level <= b.level
    # every scalar metadata value is a column (for --belief-group)
    assert all(set(keys) <= set(e.columns) and e.columns["source_dataset"] == dataset
               for e in everything)  # fmt: skip
    d = task.describe()
    assert d["num_validation"] == 40 and set(d["levels"]) == {"train", "validation", "test"}
    assert d["longest_prompt_answer_chars"] == max(len(e.prompt) + len(e.answer)
                                                   for e in everything)  # fmt: skip
    assert d["details"]["dataset"] == dataset and d["details"]["source"] == "reasoning-gym"


def test_chain_sum_level_is_the_sum_of_term_and_digit_ranks() -> None:
    task = make_task("rg:chain_sum", **SMALL)
    for e in task.train:  # defaults: 2..6 terms, 1..4 digits, all present in 420 items
        assert e.level == (e.columns["num_terms"] - 2) + (e.columns["num_digits"] - 1)
    assert task.describe()["levels"]["train"].keys() == set(range(8))


def test_spec_options_set_the_config_and_name_the_task() -> None:
    task = make_task("rg:spell_backward?min_word_len=3&max_word_len=5", **SMALL)
    assert task.name == "rg:spell_backward?min_word_len=3&max_word_len=5"
    lens = {e.columns["word_len"] for e in task.train + task.validation + task.test}
    assert lens == {3, 4, 5}
    assert all(e.level == e.columns["word_len"] - 3 for e in task.train)
    assert task.details["config"] == {"min_word_len": 3, "max_word_len": 5}
    # the same through keyword arguments, and the same items
    again = make_task("rg:spell_backward", config={"min_word_len": 3, "max_word_len": 5}, **SMALL)
    assert [e.prompt for e in again.train] == [e.prompt for e in task.train]
    # sizes in the spec
    sized = make_task("rg:spell_backward?num_train=10&num_validation=0&num_test=5")
    assert (len(sized.train), len(sized.validation), len(sized.test)) == (10, 0, 5)


def test_splits_are_seeded_and_the_test_split_does_not_depend_on_num_train() -> None:
    a = make_task("rg:chain_sum", seed=0, **SMALL)
    b = make_task("rg:chain_sum", seed=0, **{**SMALL, "num_train": 120})
    c = make_task("rg:chain_sum", seed=1, **SMALL)
    assert [e.prompt for e in a.test] == [e.prompt for e in b.test]
    assert [e.prompt for e in a.validation] == [e.prompt for e in b.validation]
    assert [e.prompt for e in b.train] == [e.prompt for e in a.train[:120]]
    assert not {e.prompt for e in a.test} & {e.prompt for e in c.test}


def test_a_small_question_space_is_deduplicated_then_refused_when_exhausted() -> None:
    spec = "rg:chain_sum?min_terms=2&max_terms=2&min_digits=1&max_digits=1"
    task = make_task(spec, num_train=60, num_validation=20, num_test=20)
    prompts = [e.prompt for e in task.train + task.validation + task.test]
    assert len(set(prompts)) == 100
    with pytest.raises(ValueError, match=r"train split: only \d+ distinct new questions") as e:
        make_task(spec, num_train=400, num_validation=0, num_test=0)
    assert "widen the dataset's config" in str(e.value)


def test_threshold_turns_partial_scores_into_successes() -> None:
    strict = make_task("rg:spell_backward?min_word_len=6&max_word_len=8", **SMALL)
    loose = make_task("rg:spell_backward?min_word_len=6&max_word_len=8&threshold=0.8", **SMALL)
    ex = strict.test[0]
    one_off = ex.answer[:-1] + ("a" if ex.answer[-1] != "a" else "b")
    assert strict.score([ex], [one_off]).rewards.tolist() == [0.0]  # scores about 0.85
    assert loose.score([loose.test[0]], [one_off]).rewards.tolist() == [1.0]
    assert loose.score([loose.test[0]], ["zz"]).rewards.tolist() == [0.0]
    assert loose.name.endswith("&threshold=0.8") and ">= 0.8" in loose.reward_source
    for bad in ("0", "1.5", "abc"):
        with pytest.raises(ValueError, match="threshold"):
            make_task(f"rg:spell_backward?threshold={bad}", **SMALL)


def test_level_option_picks_the_keys() -> None:
    digits = make_task("rg:chain_sum?level=num_digits", **SMALL)
    assert all(e.level == e.columns["num_digits"] - 1 for e in digits.train)
    flat = make_task("rg:chain_sum?level=none", **SMALL)
    assert {e.level for e in flat.train} == {0} and flat.details["level_keys"] == []
    with pytest.raises(ValueError, match=r"level key 'word_len' is not a number .*num_digits"):
        make_task("rg:chain_sum?level=word_len", **SMALL)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("rg:chain_summ", r"unknown reasoning-gym dataset 'chain_summ'. Did you mean 'chain_sum'"),
        ("rg:", "names no dataset"),
        ("rg:spell_backward?min_len=3",
         r"rg:spell_backward has no option 'min_len'.*Config fields of spell_backward: "
         r"min_word_len, max_word_len, data_file; task options: threshold"),
        ("rg:spell_backward?min_word_len=three", r"min_word_len is 'three': write a number"),
        ("rg:chain_sum?allow_negation=maybe", "write true or false"),
        ("rg:chain_sum?seed=3", r"'seed' is set by the task .*--task-seed"),
        ("rg:chain_sum?size=3", r"'size' is set by the task"),
        ("rg:chain_sum?min_terms=2&min_terms=3", "sets 'min_terms' twice"),
        ("rg:chain_sum?min_terms", "'min_terms' is not key=value"),
        ("rg:chain_sum?min_terms=9&max_terms=2", "reasoning-gym refuses the config"),
        ("rg:chain_sum?num_train=0", "num_train must be an integer >= 1"),
    ],
)  # fmt: skip
def test_spec_errors_name_the_problem_and_the_fix(spec: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_task(spec, num_validation=0, num_test=0) if "num_train" in spec else make_task(spec)


def test_options_given_twice_and_typed_fields() -> None:
    with pytest.raises(ValueError, match=r"sets \['num_train'\] and so do keyword arguments"):
        make_task("rg:chain_sum?num_train=5", num_train=6)
    with pytest.raises(ValueError, match=r"sets \['min_terms'\] and so do keyword arguments"):
        make_task("rg:chain_sum?min_terms=3", config={"min_terms": 2})
    # a list-typed field, comma-separated; booleans and Literal choices
    spec = "rg:basic_arithmetic?operators=+,-&allow_parentheses=false&format_style=natural"
    task = make_task(spec, num_train=30, num_validation=0, num_test=0)
    assert task.details["config"]["operators"] == ["+", "-"]
    assert not any("*" in e.prompt or "(" in e.prompt for e in task.train)
    with pytest.raises(ValueError, match="choose one of simple, natural"):
        make_task("rg:basic_arithmetic?format_style=fancy")
    assert rgt._parse("none", int | None, "x") is None
    assert rgt._parse("1,2", tuple[int, ...], "x") == (1, 2)


def test_printable_ascii_mapping() -> None:
    assert rgt.to_printable_ascii("na\u00efve \u201cquote\u201d \u2264 2\t3\r\n") == (
        'naive "quote" <= 2 3\n'
    )
    assert rgt.to_printable_ascii("\u4e2d \U0001f600 ok") == "? ? ok"
    assert doctest.testmod(rgt, optionflags=doctest.ELLIPSIS).failed == 0


def test_a_missing_reasoning_gym_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    rgt._reasoning_gym.cache_clear()
    monkeypatch.setitem(sys.modules, "reasoning_gym", None)  # import reasoning_gym now fails
    try:
        with pytest.raises(MissingExtraError, match=r"the 'rg' extra.*pip install -e \"\.\[rg\]\""):
            make_task("rg:chain_sum")
        with pytest.raises(ValueError):  # the command line reports it as a user error
            make_task("rg:chain_sum")
    finally:
        rgt._reasoning_gym.cache_clear()


def test_the_registry_lists_rg_and_suggests_it() -> None:
    assert "chain_sum" in rgt.rg_datasets() and len(rgt.rg_datasets()) > 50
    with pytest.raises(ValueError, match=r"Did you mean 'rg'\?.*'rg:<dataset>' for reasoning-gym"):
        make_task("rgg:chain_sum")
