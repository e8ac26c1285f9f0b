"""trainers.tasks.answers: final-answer extraction, matching and the unbiased pass@k."""

from __future__ import annotations

import itertools
import math
import threading

import numpy as np
import pytest

from trainers.tasks import MissingExtraError, answers, answers_match, extract_answer, pass_at_k
from trainers.tasks.answers import _math_verify, require_math_verify


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


# --- added with the mirrored layout ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the last \boxed wins even when an earlier one is nested deeper
        (r"\boxed{\sqrt{\frac{1}{2}}} or \boxed{2}", "2"),
        # an empty GSM8K tail falls back to the last number
        ("12 apples and 30 pears\n####", "30"),
        ("####   \n", None),
        # the line after #### is taken whole, text included
        ("#### 7 apples\nmore 9", "7 apples"),
        ("a -1,234.5 loss", "-1,234.5"),
        # \boxed with no brace after it is not a box: the last number is used
        (r"\boxed 3 and 4", "4"),
    ],
)
def test_extract_answer_edge_cases(text, expected):
    assert extract_answer(text) == expected


@pytest.fixture
def no_math_verify(monkeypatch):
    """matching as it is without the ``math`` extra installed"""
    monkeypatch.setattr(answers, "_math_verify", lambda: None)


@pytest.mark.usefixtures("no_math_verify")
def test_answers_match_numbers_exactly_not_approximately():
    # fractions compare as exact rationals: 1/3 is not 0.333
    assert answers_match("1/3", r"\frac{1}{3}")
    assert not answers_match("0.333", "1/3")
    assert answers_match("(2)/(4)", "0.5")
    # a zero denominator is not a number; it falls back to text equality
    assert answers_match("1/0", "1/0") and not answers_match("1/0", "0")
    # numbers and text never meet: "42" against "forty-two" is text inequality
    assert not answers_match("42", "forty-two")
    assert answers_match("A.", "A") and not answers_match("a", "A")


#: equal by value: the numeric rule sees these without math-verify
NUMERIC_EQUAL = [("0.625", "5/8"), (r"\frac{5}{8}", "0.625"), (r"\frac{1}{2}", "0.5"),
                 (r"\dfrac{3}{4}", "0.75"), ("1,200", "1200.0")]  # fmt: skip
#: equal only symbolically: math-verify's work
SYMBOLIC_EQUAL = [
    (r"2\sqrt{2}", r"\sqrt{8}"),
    (r"\pi/2", r"\frac{\pi}{2}"),
    (r"2^{1/2}", r"\sqrt{2}"),
    ("x=5", "5"),
    (r"50\%", "0.5"),
    (r"1-\frac{3}{8}", r"\frac{5}{8}"),
]
#: unequal under every rule
UNEQUAL = [("0.333", "1/3"), ("3", r"\sqrt{2}"), (r"\frac{5}{9}", r"\frac{5}{8}"), ("0.6", "5/8")]


@pytest.mark.usefixtures("no_math_verify")
def test_without_math_verify_numbers_match_and_symbolic_forms_do_not():
    assert all(answers_match(p, r) for p, r in NUMERIC_EQUAL)
    assert not any(answers_match(p, r) for p, r in SYMBOLIC_EQUAL)
    assert not any(answers_match(p, r) for p, r in UNEQUAL)
    with pytest.raises(MissingExtraError, match=r"the 'math' extra.*pip install -e \"\.\[math\]\""):
        answers_match("x", "y", symbolic=True)
    with pytest.raises(ValueError, match="'math' extra"):  # the command line's user error
        require_math_verify()


def test_math_verify_matches_symbolic_equivalences():
    math_verify = pytest.importorskip("math_verify")
    assert _math_verify() is math_verify
    assert all(answers_match(p, r) for p, r in NUMERIC_EQUAL + SYMBOLIC_EQUAL)
    assert not any(answers_match(p, r) for p, r in UNEQUAL)
    # symbolic=False is the numeric/text rule alone, installed or not
    assert all(answers_match(p, r, symbolic=False) for p, r in NUMERIC_EQUAL)
    assert not any(answers_match(p, r, symbolic=False) for p, r in SYMBOLIC_EQUAL)
    assert answers_match(*SYMBOLIC_EQUAL[0], symbolic=True)


def test_math_verify_works_off_the_main_thread():
    pytest.importorskip("math_verify")
    # its timeouts use signal.alarm, which a worker thread may not set: it runs without them
    out: list[bool] = []
    worker = threading.Thread(target=lambda: out.extend(answers_match(p, r)
                                                        for p, r in SYMBOLIC_EQUAL))  # fmt: skip
    worker.start()
    worker.join()
    assert out == [True] * len(SYMBOLIC_EQUAL)


def test_pass_at_k_by_the_formula():
    # 1 - C(n-c, k)/C(n, k): n=5, c=2, k=2 -> 1 - 3/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(5, 4, 2) == 1.0  # n - c < k: every draw of two holds a success
    assert pass_at_k(5, 0, 5) == 0.0
    assert pass_at_k(20, 7, 5) == pytest.approx(1 - math.comb(13, 5) / math.comb(20, 5))
