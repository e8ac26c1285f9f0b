"""trainers.tasks.arithmetic: the level ladder, the held-out split, the pools, exact match."""

from __future__ import annotations

import json
import operator
import re
from collections import Counter

import numpy as np
import pytest

from trainers.tasks import (
    ARITHMETIC_LEVELS,
    TEST_ID_OFFSET,
    Example,
    Scores,
    arithmetic_task,
    exact_match,
    make_task,
)
from trainers.tasks.arithmetic import _even_split, _level_size, _pool_of

OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul}


def _eval(prompt: str) -> int:
    m = re.fullmatch(r"(\d+)([+*-])(\d+)=", prompt)
    assert m is not None, prompt
    return OPS[m.group(2)](int(m.group(1)), int(m.group(3)))


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


# --- added with the mirrored layout ----------------------------------------------------------


def _brute_size(level: int) -> int:
    """Distinct expressions of a level, enumerated (``-`` keeps b <= a)."""
    seen = set()
    for op, (a0, a1), (b0, b1) in ARITHMETIC_LEVELS[level]:
        for a in range(a0, a1 + 1):
            for b in range(b0, b1 + 1):
                if op != "-" or b <= a:
                    seen.add((a, op, b))
    return len(seen)


def test_level_sizes_are_the_docstring_table_and_a_brute_force_count():
    table = {0: 100, 1: 900, 2: 8100, 3: 4995, 4: 100, 5: 720, 6: 810000, 7: 89100}
    for level, size in table.items():
        assert _level_size(level) == size
    for level in (0, 1, 2, 3, 4, 5):  # the small ones enumerated (6 and 7 are large)
        assert _brute_size(level) == table[level]
    # dd-d: a in 10..99, b in 0..9 all allowed (900); dd-dd: b in 10..a (1 + ... + 90 = 4095)
    assert 900 + sum(range(1, 91)) == 4995


def test_exact_match_strips_whitespace_only():
    ex = Example(id=0, prompt="2+2=", answer="4")
    assert [exact_match(c, ex) for c in ("4", "\t4 \n", "04", "4.0", "+4", "4</s>")] == [
        1.0,
        1.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ]


def test_even_split_water_fills_under_caps():
    assert _even_split(10, [100, 100, 100]) == [4, 3, 3]
    assert _even_split(10, [1, 100, 100]) == [1, 5, 4]  # the capped slot's share moves on
    assert _even_split(7, [2, 2, 2]) == [2, 2, 2]  # more than the caps: all full, rest dropped
    assert _even_split(0, [3, 3]) == [0, 0]


def test_held_out_counts_follow_the_caps():
    # levels 0 and 4 hold out at most 20 each (20 % of 100), level 2 up to 1,620
    task = arithmetic_task(seed=0, num_train=30, num_test=100, levels=[0, 2, 4])
    assert Counter(e.level for e in task.test) == {0: 20, 2: 60, 4: 20}
    assert Counter(e.level for e in task.train) == {0: 10, 2: 10, 4: 10}
    # the caps' sum is exactly the limit: 40 is allowed, 41 is not
    assert len(arithmetic_task(num_train=2, num_test=40, levels=[0, 4]).test) == 40
    with pytest.raises(ValueError) as exc:
        arithmetic_task(num_train=2, num_test=41, levels=[0, 4])
    assert "num_test=41 exceeds the 40 held-out expressions the levels [0, 4] allow" in str(
        exc.value
    )
    assert "lower num_test or add harder levels" in str(exc.value)


def test_bad_sizes_name_the_numbers():
    with pytest.raises(ValueError, match=r"num_test >= the number of levels \(3\), got "
                       r"num_train=5, num_test=2"):  # fmt: skip
        arithmetic_task(num_train=5, num_test=2, levels=[0, 1, 2])
    with pytest.raises(ValueError, match=r"got num_train=0, num_test=8"):
        arithmetic_task(num_train=0, num_test=8)
    with pytest.raises(ValueError, match=r"include unknown levels \[8, 9\]: choose a non-empty "
                       r"subset of \[0, 1, 2, 3, 4, 5, 6, 7\]"):  # fmt: skip
        arithmetic_task(levels=[9, 8, 1])


def test_pool_of_is_the_parity_of_the_expressions_crc32():
    import zlib

    for expr in [(37, "+", 5), (9, "*", 9), (512, "-", 77), (0, "+", 0)]:
        a, op, b = expr
        want = "warmup" if zlib.crc32(f"{a}{op}{b}".encode()) % 2 == 0 else "rl"
        assert _pool_of(expr) == want
    rl = arithmetic_task(seed=2, num_train=200, num_test=8)
    for e in rl.train:
        m = re.fullmatch(r"(\d+)([+*-])(\d+)=", e.prompt)
        assert m is not None
        assert _pool_of((int(m.group(1)), m.group(2), int(m.group(3)))) == "rl"


def test_validation_leaves_train_and_test_bit_identical_and_is_disjoint() -> None:
    plain = arithmetic_task(seed=2, num_train=3000, num_test=400, pool="warmup")
    assert plain.validation == []  # none unless asked: nothing else changes
    task = arithmetic_task(seed=2, num_train=3000, num_test=400, pool="warmup", num_validation=400)
    assert task.train == plain.train and task.test == plain.test
    assert [e.prompt for e in task.train] == [e.prompt for e in plain.train]
    val = task.validation
    assert len(val) == 400 and [e.id for e in val] == [2_000_000 + j for j in range(400)]
    prompts = [e.prompt for e in val]
    assert len(set(prompts)) == 400  # distinct
    assert not set(prompts) & {e.prompt for e in task.test}
    assert not set(prompts) & {e.prompt for e in task.train}  # the warm-up half never has them
    for e in val:
        a, op, b = re.fullmatch(r"(\d+)([+*-])(\d+)=", e.prompt).groups()  # type: ignore[union-attr]
        assert _pool_of((int(a), op, int(b))) == "rl" and e.answer == str(_eval(e.prompt))
    # spread as test is: the small levels d+d and d*d capped at 20 % of their 100 expressions
    assert Counter(e.level for e in val) == Counter(e.level for e in task.test)
    # its own generator: the same validation whatever the training split's size or pool
    other = arithmetic_task(seed=2, num_train=50, num_test=400, pool="rl", num_validation=400)
    assert other.validation == val
    assert arithmetic_task(seed=3, num_train=50, num_validation=400).validation != val


def test_validation_size_is_checked() -> None:
    with pytest.raises(ValueError, match=r"num_validation=41 must be between 0 and the 40"):
        arithmetic_task(seed=0, num_train=10, num_test=10, levels=[0, 4], num_validation=41)
    with pytest.raises(ValueError, match="num_validation=-1"):
        arithmetic_task(seed=0, num_train=10, num_validation=-1)
    small = arithmetic_task(seed=0, num_train=10, num_test=10, levels=[0, 4], num_validation=40)
    assert Counter(e.level for e in small.validation) == {0: 20, 4: 20}


def test_validation_prompts_are_never_trained_on():
    from trainers.tasks.arithmetic import arithmetic_task

    task = arithmetic_task(seed=0, num_train=20_000, num_test=400, num_validation=400)
    prompts = {ex.prompt for ex in task.validation}
    assert len(prompts) == 400
    assert not prompts & {ex.prompt for ex in task.train}
    assert not prompts & {ex.prompt for ex in task.test}
    # the small levels make the check bite: without the exclusion d+d is all but surely drawn
    assert any(ex.level == 0 for ex in task.validation)
    # test is the same with or without a validation split; so is the warm start's train split
    plain = arithmetic_task(seed=0, num_train=20_000, num_test=400)
    assert [ex.prompt for ex in plain.test] == [ex.prompt for ex in task.test]
    warm = arithmetic_task(seed=0, num_train=2_000, num_test=400, pool="warmup")
    warm_v = arithmetic_task(
        seed=0, num_train=2_000, num_test=400, pool="warmup", num_validation=400
    )
    assert [ex.prompt for ex in warm.train] == [ex.prompt for ex in warm_v.train]
