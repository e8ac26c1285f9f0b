"""Tests of adaroll_env.schedules: the one parser of a rounds schedule, its normal form, the round
size after some rollouts, and the ``"auto"`` default."""

from __future__ import annotations

import numpy as np
import pytest

from adaroll_env import model as am
from adaroll_env.model import AllocationParams
from adaroll_env.schedules import (
    DEFAULT_ROUND_SCHEDULE,
    format_schedule,
    normalise_schedule,
    parse_round_schedule,
    resolve_schedule_spec,
    schedule_round_size,
)

# --- parse_round_schedule -------------------------------------------------------------------------


def _round_sizes(params: AllocationParams) -> list[int]:
    """Sizes of the decisions of one episode, every round given to question 0 first (any split
    spends the same), outcomes all failures."""
    state = am.initial_state(params)
    B = params.num_questions
    if params.pilot:
        state = am.apply_counts(params, state, [params.pilot] * B, [0] * B)
    sizes = []
    while not am.is_done(params, state):
        r = am.next_round_size(params, state)
        counts = am.split_round(np.ones(B), r, am.capacity(params, state))
        state = am.apply_counts(params, state, counts, np.zeros(B, dtype=np.int64))
        sizes.append(r)
    return sizes


@pytest.mark.parametrize(
    ("spec", "budget", "expected"),
    [
        ("384,128", 512, (384, 128)),
        ("384+128", 512, (384, 128)),
        (" 0.75 , 0.25 ", 512, (384, 128)),
        ("0.5,0.25,0.25", 512, (256, 128)),  # equal trailing rounds fold into the repeat
        ("256,256", 512, (256,)),
        ("1.0", 512, (512,)),
        ("0.34,0.33,0.33", 100, (34, 33)),
        ("0.4,0.3,0.3", 7, (3, 2)),  # 2.8, 2.1, 2.1 -> largest remainders 3, 2, 2
        ((448, 64), 512, (448, 64)),
    ],
)
def test_parse_round_schedule(spec, budget, expected):
    got = am.parse_round_schedule(spec, budget)
    assert got == expected
    # the parsed schedule spends exactly the budget
    p = AllocationParams(num_questions=4, budget=budget, mode="rounds", round_schedule=got)
    assert sum(_round_sizes(p)) == budget


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("384,100", "hands out 484 rollouts, but the rounds hand out 512.*sum to 512"),
        ("0.5,0.4", "fractions summing to 0.9, not 1"),
        ("0.5,256", "mixes rollout counts and fractions"),
        ("384,,128", "empty entry"),
        ("384,abc", "'abc' is not a number"),
        ("512,0", "round of 0 rollouts"),
        ("1.5,-0.5", "fraction 1.5"),
        ("0.9995,0.0005", "less than one rollout"),
    ],
)
def test_parse_round_schedule_errors(spec, match):
    with pytest.raises(ValueError, match=match):
        am.parse_round_schedule(spec, 512)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ((0.75, 0.25), (384, 128)),  # a sequence of floats is fractions
        ([np.float64(0.5), np.float64(0.5)], (256,)),
        ([np.int64(448), 64], (448, 64)),
        ("512", (512,)),
    ],
)
def test_parse_round_schedule_sequences(spec, expected):
    got = parse_round_schedule(spec, 512)
    assert got == expected and all(type(r) is int for r in got)


def test_parse_round_schedule_error_messages_give_the_fix():
    with pytest.raises(ValueError) as info:
        parse_round_schedule("384,100", 512)
    assert str(info.value) == (
        "round schedule '384,100' hands out 484 rollouts, but the rounds hand out 512 (N minus "
        "the pilot): make the counts sum to 512 (e.g. '384,128') or give fractions summing to 1 "
        "(e.g. '0.75,0.25')"
    )
    # the example split fits the budget given (3/4 of it, then the rest)
    with pytest.raises(ValueError, match=r"make the counts sum to 10 \(e\.g\. '7,3'\)"):
        parse_round_schedule("4,4", 10)
    with pytest.raises(ValueError, match=r"make the counts sum to 1 \(e\.g\. '1'\)"):
        parse_round_schedule("1,1", 1)
    with pytest.raises(ValueError, match=r"needs a budget >= 1 to split, got 0"):
        parse_round_schedule("0.5,0.5", 0)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ([], "must be a string such as '384,128'"),
        (None, "must be a string such as '384,128'"),
        ((384, True), "True is not a number"),
        ((384, "128"), "'128' is not a number"),
    ],
)
def test_parse_round_schedule_type_errors(spec, match):
    with pytest.raises(TypeError, match=match):
        parse_round_schedule(spec, 512)


def test_parse_round_schedule_fraction_ties_go_to_the_earlier_round():
    # 10 · 0.25 = 2.5 each: floors 2, 2, 2, 2; the two rollouts left go to the first two rounds
    # (3, 3, 2, 2), whose trailing repeat folds into (3, 3, 2)
    assert parse_round_schedule("0.25,0.25,0.25,0.25", 10) == (3, 3, 2)
    # 5 · (0.5, 0.5) = 2.5 each: the first round takes the extra rollout
    assert parse_round_schedule("0.5,0.5", 5) == (3, 2)


# --- normalise_schedule and format_schedule -------------------------------------------------------


def test_normalise_schedule_drops_trailing_repeats_only():
    assert normalise_schedule((384, 128, 128)) == (384, 128)
    assert normalise_schedule([5, 5, 5]) == (5,)
    assert normalise_schedule((4, 4, 8)) == (4, 4, 8)  # equal entries not at the end stay
    got = normalise_schedule((np.int64(3), 2))
    assert got == (3, 2) and all(type(r) is int for r in got)
    assert normalise_schedule(()) == ()


def test_normalise_schedule_errors_name_the_entry_and_the_fix():
    with pytest.raises(TypeError) as info:
        normalise_schedule("384,128")
    assert str(info.value) == (
        "round_schedule must be a tuple of positive round sizes, got '384,128': parse a spec "
        "such as '384,128' with adaroll_env.parse_round_schedule(spec, budget)"
    )
    with pytest.raises(TypeError, match=r"round_schedule\[1\] = True is not an integer"):
        normalise_schedule((8, True))
    with pytest.raises(ValueError) as info:
        normalise_schedule((8, -1))
    assert str(info.value) == (
        "round_schedule[1] = -1 must be >= 1: every round hands out at least one rollout "
        "(drop the entry)"
    )


def test_format_schedule_is_the_inverse_of_parsing():
    assert format_schedule((384, 128)) == "384+128"
    assert format_schedule([np.int64(8), 4], sep=",") == "8,4"
    for schedule in [(384, 128), (10, 3, 7), (512,)]:
        spec = format_schedule(schedule)
        assert parse_round_schedule(spec, sum(schedule)) == schedule


# --- schedule_round_size --------------------------------------------------------------------------


def _size_by_walking(schedule, done):
    """The round containing rollout ``done`` found by walking the rounds one by one: what is
    left of it."""
    start, k = 0, 0
    while True:
        r = schedule[min(k, len(schedule) - 1)]
        if start + r > done:
            return start + r - done
        start += r
        k += 1


@pytest.mark.parametrize("schedule", [(384, 128), (3,), (5, 2, 4), (1, 6)])
def test_schedule_round_size_by_walking_the_rounds(schedule):
    for done in range(0, 3 * sum(schedule) + 7):
        assert schedule_round_size(schedule, done) == _size_by_walking(schedule, done), done


def test_schedule_round_size_hand_worked():
    assert schedule_round_size((384, 128), 0) == 384
    assert schedule_round_size((384, 128), 384) == 128
    assert schedule_round_size((384, 128), 512) == 128  # the last entry repeats
    assert schedule_round_size((384, 128), 100) == 284  # mid-round: what is left of it
    assert schedule_round_size((384, 128), 600) == 40
    assert schedule_round_size((384, 128), -5) == 384  # negative counts as none done


# --- resolve_schedule_spec ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "kw", "expected"),
    [
        ("auto", {"budget": 512}, DEFAULT_ROUND_SCHEDULE),
        ("auto", {"budget": 4}, DEFAULT_ROUND_SCHEDULE),
        ("auto", {"budget": 3}, None),  # too small to split in two rounds of 2
        ("auto", {"budget": 512, "rounds": 2}, None),
        ("auto", {"budget": 512, "round_size": 64}, None),
        ("auto", {"budget": 512, "allocator": "sb3:pretrained"}, None),
        ("auto", {"budget": 512, "allocator": "bamdp"}, DEFAULT_ROUND_SCHEDULE),
        ("384,128", {"budget": 512, "rounds": 2}, "384,128"),  # any other spec as it is
        (None, {"budget": 512}, None),
    ],
)
def test_resolve_schedule_spec(spec, kw, expected):
    assert resolve_schedule_spec(spec, **kw) == expected


def test_default_schedule_is_two_equal_rounds():
    assert parse_round_schedule(DEFAULT_ROUND_SCHEDULE, 512) == (256,)
    assert parse_round_schedule(DEFAULT_ROUND_SCHEDULE, 7) == (4, 3)
