"""``arithmetic``: synthetic expressions such as ``"37+5="`` on a graded ladder of difficulty
levels, scored by exact match; trains a tiny model on CPU in minutes."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Literal

import numpy as np

from trainers.tasks.base import TEST_ID_OFFSET, VALIDATION_ID_OFFSET, Example, RewardFunc, Task

_D, _DD, _DDD = (0, 9), (10, 99), (100, 999)
#: level -> forms (op, range of a, range of b); "-" forms keep only pairs with b <= a.
ARITHMETIC_LEVELS: dict[int, list[tuple[str, tuple[int, int], tuple[int, int]]]] = {
    0: [("+", _D, _D)],
    1: [("+", _DD, _D)],
    2: [("+", _DD, _DD)],
    3: [("-", _DD, _D), ("-", _DD, _DD)],
    4: [("*", _D, _D)],
    5: [("*", _DD, (2, 9))],
    6: [("+", _DDD, _DDD)],
    7: [("-", _DDD, _DD), ("*", _DD, _DD)],
}
#: At most this fraction of a level's distinct expressions is held out for test.
_MAX_TEST_FRACTION = 0.2


def _level_size(level: int) -> int:
    size = 0
    for op, (a0, a1), (b0, b1) in ARITHMETIC_LEVELS[level]:
        if op == "-":
            size += sum(max(0, min(a, b1) - b0 + 1) for a in range(a0, a1 + 1))
        else:
            size += (a1 - a0 + 1) * (b1 - b0 + 1)
    return size


def _draw(rng: np.random.Generator, level: int) -> tuple[int, str, int]:
    forms = ARITHMETIC_LEVELS[level]
    op, (a0, a1), (b0, b1) = forms[int(rng.integers(len(forms)))]
    while True:
        a, b = int(rng.integers(a0, a1 + 1)), int(rng.integers(b0, b1 + 1))
        if op != "-" or b <= a:
            return a, op, b


ArithmeticPool = Literal["rl", "warmup", "all"]


def _pool_of(expr: tuple[int, str, int]) -> str:
    """The fixed half of the expressions an expression belongs to: ``"warmup"`` or ``"rl"``."""
    a, op, b = expr
    return "warmup" if zlib.crc32(f"{a}{op}{b}".encode()) % 2 == 0 else "rl"


def _arith_example(id_: int, expr: tuple[int, str, int], level: int) -> Example:
    a, op, b = expr
    result = a + b if op == "+" else a - b if op == "-" else a * b
    return Example(id=id_, prompt=f"{a}{op}{b}=", answer=str(result), level=level)


def exact_match(completion: str, example: Example) -> float:
    """1.0 when the completion, stripped of whitespace, equals the answer exactly, else 0.0."""
    return 1.0 if completion.strip() == example.answer else 0.0


def _even_split(total: int, caps: list[int]) -> list[int]:
    """Split ``total`` as evenly as possible over slots, none above its cap (water-filling)."""
    out = [0] * len(caps)
    left = total
    while left > 0:
        open_ = [i for i in range(len(caps)) if out[i] < caps[i]]
        if not open_:
            break
        share, extra = divmod(left, len(open_))
        for rank, i in enumerate(open_):
            give = min(caps[i] - out[i], share + (1 if rank < extra else 0))
            out[i] += give
            left -= give
    return out


def arithmetic_task(
    *,
    seed: int = 0,
    num_train: int = 2000,
    num_test: int = 400,
    levels: Sequence[int] | None = None,
    reward_funcs: RewardFunc | Sequence[RewardFunc] | None = None,
    pool: ArithmeticPool = "rl",
    num_validation: int = 0,
) -> Task:
    """Synthetic arithmetic with graded difficulty, scored by exact match.

    Prompts are ``"{a}{op}{b}="`` with no spaces (``"37+5="``), answers ``str(result)``
    (``"42"``); the completion is the answer text and :func:`exact_match` scores it. Levels
    (``d`` = one digit 0-9, ``dd`` = 10-99, ``ddd`` = 100-999):

    =====  ==========================================  ===================
    level  expressions                                 distinct
    =====  ==========================================  ===================
    0      d+d                                         100
    1      dd+d                                        900
    2      dd+dd                                       8,100
    3      dd-d, dd-dd (result >= 0; half each)        4,995
    4      d*d                                         100
    5      dd*m (m = 2-9)                              720
    6      ddd+ddd                                     810,000
    7      ddd-dd, dd*dd (half each)                   89,100
    =====  ==========================================  ===================

    Deterministic given ``seed``. Test expressions are drawn first, distinct, at most 20% of a
    level's distinct expressions (so small levels such as d+d hold 20 out), spread as evenly over
    levels as those caps allow; every chosen level gets at least one. Train examples are drawn
    with replacement from the rest, evenly over levels, then shuffled. Train ids are ``0..n-1``,
    test ids ``1_000_000 + j``. ``reward_funcs`` (TRL-style) replaces the exact-match verifier.

    ``pool`` splits the non-test expressions in two fixed halves (by a hash of the expression):
    ``"warmup"`` for the supervised warm start of the tiny model, ``"rl"`` (default) for GRPO
    training, ``"all"`` for both. The warm start never sees an RL prompt, so what GRPO learns on
    its prompts has to generalise, exactly as it must to move the held-out accuracy.

    ``num_validation`` (default 0: none) adds a ``validation`` split of distinct expressions of
    the ``"rl"`` half that are not in test, spread over levels as test is (at most 20% of a
    level's expressions each), ids ``2_000_000 + j``, drawn from a generator of its own so that
    test is bit-identical with or without it. Train never holds a validation expression (like
    test, they are excluded from its draws; the ``"warmup"`` pool never meets them, so a warm
    start's train split is bit-identical with or without it). It is for choosing settings — a
    warm start's, or GRPO's (``--validation-size``, ``--eval-split validation``) — without
    looking at test.

    >>> task = arithmetic_task(seed=0, num_train=8, num_test=8)
    >>> len(task.train), len(task.test)
    (8, 8)
    """
    chosen = _check_levels(
        levels, num_train=num_train, num_test=num_test, pool=pool, num_validation=num_validation
    )
    rng = np.random.default_rng(seed)
    test, held_out = _draw_test(rng, chosen, num_test)
    validation, validated = _draw_validation(seed, chosen, num_validation, held_out)
    never_train = {lv: held_out[lv] | validated[lv] for lv in chosen}
    train = _draw_train(rng, chosen, num_train, never_train, pool)
    return Task(
        "arithmetic",
        train,
        test,
        validation=validation,
        verifier=exact_match,
        reward_funcs=reward_funcs,
        reward_source="exact match of the stripped completion",
    )


#: expression ``(a, op, b)``
_Expr = tuple[int, str, int]


def _check_levels(
    levels: Sequence[int] | None,
    *,
    num_train: int,
    num_test: int,
    pool: str,
    num_validation: int = 0,
) -> list[int]:
    """The chosen levels, sorted, after checking every argument of :func:`arithmetic_task`."""
    chosen = sorted(set(ARITHMETIC_LEVELS) if levels is None else {int(x) for x in levels})
    unknown = [x for x in chosen if x not in ARITHMETIC_LEVELS]
    if unknown or not chosen:
        raise ValueError(
            f"arithmetic levels {list(levels or [])} include unknown levels {unknown}: "
            f"choose a non-empty subset of {sorted(ARITHMETIC_LEVELS)}"
        )
    if num_train < 1 or num_test < len(chosen):
        raise ValueError(
            f"arithmetic needs num_train >= 1 and num_test >= the number of levels "
            f"({len(chosen)}), got num_train={num_train}, num_test={num_test}"
        )
    caps = _test_caps(chosen)
    if num_test > sum(caps):
        raise ValueError(
            f"num_test={num_test} exceeds the {sum(caps)} held-out expressions the levels "
            f"{chosen} allow (20% of each level): lower num_test or add harder levels"
        )
    if pool not in ("rl", "warmup", "all"):
        raise ValueError(f"pool must be 'rl', 'warmup' or 'all', got {pool!r}")
    if num_validation < 0 or num_validation > sum(caps):
        raise ValueError(
            f"num_validation={num_validation} must be between 0 and the {sum(caps)} validation "
            f"expressions the levels {chosen} allow (20% of each level): lower num_validation"
        )
    return chosen


def _test_caps(chosen: Sequence[int]) -> list[int]:
    return [max(1, int(_MAX_TEST_FRACTION * _level_size(lv))) for lv in chosen]


def _draw_test(
    rng: np.random.Generator, chosen: Sequence[int], num_test: int
) -> tuple[list[Example], dict[int, set[_Expr]]]:
    """Distinct held-out expressions, spread over ``chosen`` as evenly as their caps allow."""
    test: list[Example] = []
    held_out: dict[int, set[_Expr]] = {}
    for lv, count in zip(chosen, _even_split(num_test, _test_caps(chosen)), strict=True):
        seen: set[_Expr] = set()
        while len(seen) < count:
            expr = _draw(rng, lv)
            if expr not in seen:
                seen.add(expr)
                test.append(_arith_example(TEST_ID_OFFSET + len(test), expr, lv))
        held_out[lv] = seen
    return test, held_out


def _draw_train(
    rng: np.random.Generator,
    chosen: Sequence[int],
    num_train: int,
    held_out: dict[int, set[_Expr]],
    pool: str,
) -> list[Example]:
    """Training examples drawn with replacement outside ``held_out`` and in ``pool``, evenly
    over levels, then shuffled; ids ``0..n-1``."""
    train_exprs: list[tuple[_Expr, int]] = []
    for lv, count in zip(chosen, _even_split(num_train, [num_train] * len(chosen)), strict=True):
        while count > 0:
            expr = _draw(rng, lv)
            if expr not in held_out[lv] and (pool == "all" or _pool_of(expr) == pool):
                train_exprs.append((expr, lv))
                count -= 1
    order = rng.permutation(len(train_exprs))
    return [_arith_example(i, *train_exprs[j]) for i, j in enumerate(order)]


#: the second word of the validation split's seed: its generator is ``default_rng([seed, 1])``,
#: apart from the one that draws test and train
_VALIDATION_STREAM = 1


def _draw_validation(
    seed: int, chosen: Sequence[int], num_validation: int, held_out: dict[int, set[_Expr]]
) -> tuple[list[Example], dict[int, set[_Expr]]]:
    """Distinct expressions of the ``"rl"`` half outside ``held_out``, spread over ``chosen``
    as evenly as the caps of test allow; ids ``VALIDATION_ID_OFFSET + j``; and the expressions
    drawn at each level (what train must avoid)."""
    drawn: dict[int, set[_Expr]] = {lv: set() for lv in chosen}
    if num_validation == 0:
        return [], drawn
    rng = np.random.default_rng([seed, _VALIDATION_STREAM])
    out: list[Example] = []
    for lv, count in zip(chosen, _even_split(num_validation, _test_caps(chosen)), strict=True):
        seen = drawn[lv]
        while len(seen) < count:
            expr = _draw(rng, lv)
            if expr not in seen and expr not in held_out[lv] and _pool_of(expr) == "rl":
                seen.add(expr)
                out.append(_arith_example(VALIDATION_ID_OFFSET + len(out), expr, lv))
    return out, drawn
