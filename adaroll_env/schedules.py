"""Rounds schedules: how a step's budget splits across its decision rounds.

A schedule is a tuple of positive round sizes ``(r_0, r_1, ...)`` for the rollouts handed out
after the pilot, ``N − pilot·B``: round k hands out ``r_k``, the last entry repeating while
budget is left, each round capped by the budget left. The empty schedule means equal rounds of
``round_size``. ``parse_round_schedule`` is the one parser of a user's spec, shared by every
command line (``adaroll grpo --round-schedule``, ``adaroll bench --rounds``, the entrants file,
``scripts/bench_rounds.py``); ``AllocationParams.round_schedule`` holds the parsed tuple.

Spec rule: rollout counts (``"384,128"``) must sum to the budget the rounds hand out exactly;
fractions of it (``"0.75,0.25"``) must sum to 1 and are turned into counts by largest
remainders. Entries are separated by ``,`` or ``+`` (``"384+128"``, the form a comma-separated
grid such as ``adaroll bench --rounds 1,2,384+128`` uses).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_ROUND_SCHEDULE",
    "ONE_ROUND",
    "format_schedule",
    "normalise_schedule",
    "parse_round_schedule",
    "resolve_schedule_spec",
    "schedule_round_size",
]

#: The training default (``round_schedule="auto"`` in ``adaroll grpo``, ``adaroll compete``, the
#: live env and TRL): two equal rounds, two generation calls a step. In real training with
#: level-grouped fitted priors (docs: results, final competition: 4 seeds, 4,000 steps) two equal
#: rounds beat ``uniform`` by +3.6 ± 1.1 points with the same gradient-carrying rollouts as eight
#: rounds. On the simulator with one shared prior ``384,128`` gains more
#: (``results/rounds_sim/rounds_schedule_sim.txt``), but in the real screen with grouped priors
#: it gave 15 fewer gradient-carrying rollouts a step than equal halves (234.8 against 249.6)
#: and won one seed of two, so it is not the default.
DEFAULT_ROUND_SCHEDULE = "0.5,0.5"
#: ``"auto"`` for an allocator whose class sets ``one_round`` (``prior_filter``): everything after
#: the pilot in one round, one generation call a step.
ONE_ROUND = "1.0"


def resolve_schedule_spec(
    spec: str | None,
    *,
    rounds: int | None = None,
    round_size: int | None = None,
    budget: int,
    allocator: Any = None,
    one_round: bool = False,
) -> str | None:
    """The schedule spec a step uses: ``"auto"`` is ``DEFAULT_ROUND_SCHEDULE`` when neither
    ``rounds`` nor ``round_size`` is given and the ``budget`` after the pilot is at least 4
    rollouts, else none (those settings size the rounds), none for a learned
    ``"sb3:..."`` allocator, which keeps the round rule it was trained for (rounds of B, as
    ``sb3:pretrained``), and ``"1.0"`` (one round) for an allocator that asks for one
    (``one_round``: its class's ``one_round``, ``agents.registry.is_one_round``); any other spec
    is returned as it is. The trainer, TRL and ``adaroll bench --from-run`` all resolve it here.

    >>> resolve_schedule_spec("auto", budget=512)
    '0.5,0.5'
    >>> resolve_schedule_spec("auto", rounds=2, budget=512) is None
    True
    >>> resolve_schedule_spec("auto", budget=512, allocator="sb3:pretrained") is None
    True
    >>> resolve_schedule_spec("auto", budget=512, one_round=True)
    '1.0'
    """
    if spec != "auto":
        return spec
    learned = isinstance(allocator, str) and allocator.startswith("sb3:")
    if learned or rounds is not None or round_size is not None or int(budget) < 4:
        return None
    return ONE_ROUND if one_round else DEFAULT_ROUND_SCHEDULE


#: How far from 1 the fractions of a spec may sum (float rounding of decimal fractions).
FRACTION_TOL = 1e-6


def normalise_schedule(schedule: Any) -> tuple[int, ...]:
    """``schedule`` as a tuple of positive ints, trailing repeats of the last entry dropped
    (``(384, 128, 128)`` is ``(384, 128)``: the last entry repeats anyway). Raises ``TypeError``
    or ``ValueError`` naming the value and the fix."""
    if isinstance(schedule, (str, bytes)) or not isinstance(schedule, Sequence):
        raise TypeError(
            f"round_schedule must be a tuple of positive round sizes, got {schedule!r}: parse a "
            "spec such as '384,128' with adaroll_env.parse_round_schedule(spec, budget)"
        )
    out: list[int] = []
    for i, value in enumerate(schedule):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(
                f"round_schedule[{i}] = {value!r} is not an integer: give round sizes in rollouts"
            )
        if int(value) < 1:
            raise ValueError(
                f"round_schedule[{i}] = {value!r} must be >= 1: every round hands out at least "
                "one rollout (drop the entry)"
            )
        out.append(int(value))
    while len(out) > 1 and out[-1] == out[-2]:
        out.pop()
    return tuple(out)


def schedule_round_size(schedule: tuple[int, ...], done: int) -> int:
    """The size of the round that starts after ``done`` rollouts of the scheduled ones (not
    capped by the budget): ``schedule[k]`` at a round's start; in the middle of a round (never
    reached by decisions that hand out whole rounds) what is left of it."""
    ends = list(_ends(schedule))
    d = max(0, int(done))
    if d < ends[-1]:
        return ends[bisect.bisect_right(ends, d)] - d
    last = schedule[-1]
    return last - (d - ends[-1]) % last


def _ends(schedule: tuple[int, ...]) -> tuple[int, ...]:
    total, out = 0, []
    for r in schedule:
        total += r
        out.append(total)
    return tuple(out)


def format_schedule(schedule: Sequence[int], sep: str = "+") -> str:
    """A schedule as a spec: ``(384, 128)`` -> ``"384+128"``."""
    return sep.join(str(int(r)) for r in schedule)


def parse_round_schedule(
    spec: str | Sequence[int] | Sequence[float], budget: int
) -> tuple[int, ...]:
    """A rounds schedule from a user's spec, for the ``budget`` the rounds hand out (N minus the
    pilot's rollouts).

    ``spec`` is rollout counts (``"384,128"``, ``"384+128"`` or a sequence of ints) that must
    sum to ``budget``, or fractions of it (``"0.75,0.25"``, every entry with a decimal point,
    each in (0, 1]) that must sum to 1; fractions become counts by largest remainders (ties to
    the earlier round), and each must come to at least one rollout. The result is normalised
    (``normalise_schedule``): a schedule of equal rounds is one entry.

    >>> parse_round_schedule("384,128", 512), parse_round_schedule("0.75+0.25", 512)
    ((384, 128), (384, 128))
    >>> parse_round_schedule("256,256", 512)
    (256,)
    """
    budget = int(budget)
    if budget < 1:
        raise ValueError(f"a rounds schedule needs a budget >= 1 to split, got {budget}")
    entries = _entries(spec)
    fractional = [isinstance(e, float) for e in entries]
    if any(fractional) and not all(fractional):
        raise ValueError(
            f"round schedule {spec!r} mixes rollout counts and fractions: give counts summing "
            f"to the budget ({budget}, e.g. '{_example(budget)}') or fractions summing to 1 "
            "(e.g. '0.75,0.25')"
        )
    if all(fractional):
        counts = _from_fractions(spec, [float(e) for e in entries], budget)
    else:
        counts = [int(e) for e in entries]
        bad = [c for c in counts if c < 1]
        if bad:
            raise ValueError(
                f"round schedule {spec!r} has a round of {bad[0]} rollouts: every round hands "
                "out at least one (drop it)"
            )
        if sum(counts) != budget:
            raise ValueError(
                f"round schedule {spec!r} hands out {sum(counts)} rollouts, but the rounds "
                f"hand out {budget} (N minus the pilot): make the counts sum to {budget} (e.g. "
                f"'{_example(budget)}') or give fractions summing to 1 (e.g. '0.75,0.25')"
            )
    return normalise_schedule(counts)


def _example(budget: int) -> str:
    first = max(1, (3 * budget) // 4)
    return str(budget) if first >= budget else f"{first},{budget - first}"


def _entries(spec: Any) -> list[int | float]:
    """The entries of a spec: ints for counts, floats for fractions."""
    if isinstance(spec, str):
        text = spec.replace("+", ",").strip()
        parts = [p.strip() for p in text.split(",")]
        if not text or any(not p for p in parts):
            raise ValueError(
                f"round schedule {spec!r} has an empty entry: give round sizes separated by ',' "
                "or '+', e.g. '384,128' or '0.75,0.25'"
            )
        out: list[int | float] = []
        for p in parts:
            try:
                out.append(int(p))
                continue
            except ValueError:
                pass
            try:
                out.append(float(p))
            except ValueError:
                raise ValueError(
                    f"round schedule {spec!r}: {p!r} is not a number: give rollout counts such "
                    "as '384,128' or fractions such as '0.75,0.25'"
                ) from None
        return out
    if isinstance(spec, Sequence) and spec:
        vals: list[int | float] = []
        for v in spec:
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
                raise TypeError(
                    f"round schedule {spec!r}: {v!r} is not a number: give ints (rollouts) or "
                    "floats (fractions of the budget)"
                )
            vals.append(int(v) if isinstance(v, (int, np.integer)) else float(v))
        return vals
    raise TypeError(
        f"round schedule {spec!r} must be a string such as '384,128' or '0.75,0.25', or a "
        "non-empty sequence of round sizes"
    )


def _from_fractions(spec: Any, fractions: list[float], budget: int) -> list[int]:
    for f in fractions:
        if not (math.isfinite(f) and 0 < f <= 1):
            raise ValueError(
                f"round schedule {spec!r} has the fraction {f!r}: fractions of the budget lie "
                "in (0, 1] (give '0.75,0.25', or rollout counts such as "
                f"'{_example(budget)}')"
            )
    total = math.fsum(fractions)
    if abs(total - 1.0) > FRACTION_TOL:
        raise ValueError(
            f"round schedule {spec!r} has fractions summing to {total:g}, not 1: make them sum "
            "to 1 (e.g. '0.75,0.25')"
        )
    raw = [f * budget for f in fractions]
    counts = [math.floor(x) for x in raw]
    short = budget - sum(counts)
    order = sorted(range(len(raw)), key=lambda i: (-(raw[i] - counts[i]), i))
    for i in order[:short]:
        counts[i] += 1
    if min(counts) < 1:
        i = counts.index(min(counts))
        raise ValueError(
            f"round schedule {spec!r}: fraction {fractions[i]!r} of {budget} rollouts is less "
            "than one rollout: use fewer rounds or larger fractions"
        )
    return counts
