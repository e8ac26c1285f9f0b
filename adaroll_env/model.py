"""The pure allocation model: parameters, belief state, observation, transitions, utility.

This module is the only place where posterior arithmetic lives. The environments, the solvers,
the allocators and the trainer call these functions and never re-derive a posterior.

One GRPO step is one episode. ``B`` questions each hold a belief ``Beta(alpha_i, beta_i)``
over their pass rate; ``N`` rollouts are handed out (``pilot`` to every question first, then by
decisions of one rollout or one round of ``R``); the episode's value is the training utility
``sum_i u(s_i, f_i)`` of the final counts. States are immutable: every transition returns a new
state whose arrays are read-only.

Kept as one module of about 500 lines on purpose: the model is written once (params, state,
posterior arithmetic, transitions, observation), so that every env, solver and allocator reads
it from one place; the pure rounds encoding lives in ``adaroll_env.actions``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
from gymnasium import spaces
from numpy.typing import ArrayLike, NDArray

from adaroll_env.actions import encode_counts as encode_counts  # re-exported
from adaroll_env.actions import split_round as split_round
from adaroll_env.errors import check_int
from adaroll_env.schedules import normalise_schedule, parse_round_schedule, schedule_round_size
from adaroll_env.utilities import beta_binomial_logpmf, get_utility

Mode = Literal["sequential", "rounds"]
MODES: tuple[str, ...] = ("sequential", "rounds")

#: Largest prior parameter accepted; keeps observation bounds finite and arithmetic exact.
PRIOR_MAX = 1e6

OBS_KEYS: tuple[str, ...] = ("alpha", "beta", "successes", "rollouts", "budget_left", "mean", "std")


def _normalise_prior(name: str, value: Any, num_questions: int) -> float | tuple[float, ...]:
    """Validate a prior: a positive finite float, or a tuple of B of them."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a float or a sequence of {num_questions} floats, got bool")
    if isinstance(value, (int, float, np.integer, np.floating)):
        v = float(value)
        if not math.isfinite(v) or v <= 0 or v > PRIOR_MAX:
            raise ValueError(
                f"{name} must be finite, > 0 and <= {PRIOR_MAX:g}, got {value!r}: "
                "Beta priors need positive parameters (1.0 is the uniform prior)"
            )
        return v
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be a float or a sequence of {num_questions} floats, got {value!r}"
        ) from None
    if arr.ndim != 1 or arr.shape[0] != num_questions:
        raise ValueError(
            f"{name} has shape {arr.shape}, but num_questions is {num_questions}: "
            f"give one float for all questions or exactly {num_questions} values"
        )
    bad = ~np.isfinite(arr) | (arr <= 0) | (arr > PRIOR_MAX)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name}[{i}] = {arr[i]!r} is not a valid Beta parameter: each must be finite, "
            f"> 0 and <= {PRIOR_MAX:g}"
        )
    if np.all(arr == arr[0]):
        return float(arr[0])  # one shared prior: the same params (and cache key) as a float
    return tuple(float(x) for x in arr)


@dataclass(frozen=True)
class AllocationParams:
    """Everything fixed during one allocation episode (one GRPO step).

    Frozen, validated, hashable and picklable, so it can key caches and be saved beside models.

    Attributes:
        num_questions: B, questions in the batch.
        budget: N, rollouts to spend on the batch, pilot included (None: 8·B).
        prior_alpha: belief prior alpha, a float or a tuple of B floats.
        prior_beta: belief prior beta, a float or a tuple of B floats.
        pilot: rollouts every question gets before the first decision.
        pilot_threshold: with a pilot, a question whose prior makes the pilot's outcome nearly
            certain gets none of it: one whose prior gives its ``pilot`` rollouts less than this
            probability of at least one success, or of at least one failure (a never-solved
            difficulty group's point mass at 0). The first round after the pilot hands out the
            rollouts it skipped (``pilot_counts``). 0 (the default): every question gets it.
        max_group: cap on the rollouts of one question (None: no cap).
        mode: ``"sequential"`` (one rollout per decision) or ``"rounds"`` (R per decision).
        round_size: R, rollouts handed out per decision (1 in sequential mode); with a
            ``round_schedule``, its first entry.
        utility: registered utility name or ``"package.module:function"`` path.
        round_schedule: unequal rounds (rounds mode only): round k after the pilot hands out
            ``round_schedule[k]``, the last entry repeating, each capped by the budget left;
            empty (the default) for equal rounds of ``round_size``. Normalised: trailing
            repeats dropped, and a one-entry schedule becomes ``round_size`` (so a non-empty
            schedule always has unequal rounds). ``parse_round_schedule`` reads a user's spec.
    """

    num_questions: int = 16
    budget: int | None = None
    prior_alpha: float | tuple[float, ...] = 1.0
    prior_beta: float | tuple[float, ...] = 1.0
    pilot: int = 0
    max_group: int | None = None
    mode: Mode = "sequential"
    round_size: int = 1
    utility: str = "informative"
    round_schedule: tuple[int, ...] = ()
    pilot_threshold: float = 0.0

    def __post_init__(self) -> None:
        B = check_int("num_questions", self.num_questions, 1)
        budget = 8 * B if self.budget is None else check_int("budget", self.budget, 1)
        pilot = check_int("pilot", self.pilot, 0)
        cap = None if self.max_group is None else check_int("max_group", self.max_group, 1)
        R = check_int("round_size", self.round_size, 1)
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.mode == "sequential" and R != 1:
            raise ValueError(
                f"round_size is {R} but mode is 'sequential', which hands out one rollout per "
                "decision: use mode='rounds' or round_size=1"
            )
        schedule = normalise_schedule(self.round_schedule)
        if schedule and self.mode != "rounds":
            raise ValueError(
                f"round_schedule {schedule} is set but mode is {self.mode!r}, which hands out one "
                "rollout per decision: use mode='rounds' (the rounds env) or drop round_schedule"
            )
        if schedule and R not in (1, schedule[0]):
            raise ValueError(
                f"round_size ({R}) and round_schedule {schedule} are both set: give one (the "
                "schedule's first entry is the first round's size)"
            )
        if len(schedule) == 1:
            R, schedule = schedule[0], ()
        elif schedule:
            R = schedule[0]
        if budget <= pilot * B:
            raise ValueError(
                f"budget ({budget}) must exceed pilot·B ({pilot}·{B} = {pilot * B}) so that at "
                "least one decision remains: lower pilot or raise budget"
            )
        if cap is not None and budget > cap * B:
            raise ValueError(
                f"budget ({budget}) is larger than B·max_group ({B}·{cap} = {cap * B}), so it "
                "cannot be spent: lower budget or raise max_group"
            )
        get_utility(self.utility)
        threshold = self.pilot_threshold
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, (int, float))
            or not 0.0 <= float(threshold) < 1.0
        ):
            raise ValueError(
                f"pilot_threshold must be a probability in [0, 1), got {threshold!r}: a question "
                "skips the pilot when its prior gives the pilot's rollouts less than this chance "
                "of a success or of a failure (0: no question skips it)"
            )
        object.__setattr__(self, "pilot_threshold", float(threshold))
        object.__setattr__(self, "num_questions", B)
        object.__setattr__(self, "budget", budget)
        object.__setattr__(self, "pilot", pilot)
        object.__setattr__(self, "max_group", cap)
        object.__setattr__(self, "round_size", R)
        object.__setattr__(self, "round_schedule", schedule)
        object.__setattr__(
            self, "prior_alpha", _normalise_prior("prior_alpha", self.prior_alpha, B)
        )
        object.__setattr__(self, "prior_beta", _normalise_prior("prior_beta", self.prior_beta, B))
        # Derived constants, read on every step (not dataclass fields: no effect on eq/hash,
        # not pickled: __setstate__ runs this method again).
        object.__setattr__(self, "_N", budget)
        a = np.broadcast_to(np.asarray(self.prior_alpha, dtype=np.float64), (B,)).copy()
        b = np.broadcast_to(np.asarray(self.prior_beta, dtype=np.float64), (B,)).copy()
        derived = (a, b, a.astype(np.float32), b.astype(np.float32))
        for arr in derived:
            arr.flags.writeable = False
        object.__setattr__(self, "_priors", derived)
        counts = np.full(B, pilot, dtype=np.int64)
        if pilot and self.pilot_threshold > 0.0:
            all_fail = np.exp(beta_binomial_logpmf(0, pilot, a, b))
            all_pass = np.exp(beta_binomial_logpmf(pilot, pilot, a, b))
            certain = np.minimum(1.0 - all_fail, 1.0 - all_pass) < self.pilot_threshold
            counts[certain] = 0
        counts.flags.writeable = False
        object.__setattr__(self, "_pilot_counts", counts)
        object.__setattr__(self, "_pilot_rollouts", int(counts.sum()))
        object.__setattr__(self, "_pilot_skipped", int(counts.sum()) < pilot * B)
        # without max_group: all the budget but the other questions' pilots, counted whole even
        # where they skip it (so the cap, and the tables keyed by it, do not change with the
        # priors; a question never comes near it)
        object.__setattr__(self, "_cap", cap if cap is not None else budget - pilot * (B - 1))

    def __getstate__(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)
        self.__post_init__()

    @property
    def total_budget(self) -> int:
        """N as an int (``budget`` after defaulting)."""
        return self._N  # type: ignore[attr-defined,no-any-return]

    @property
    def cap(self) -> int:
        """The most rollouts one question can receive: ``max_group``, else N − pilot·(B−1) (the
        other questions' pilots counted whole, also where ``pilot_threshold`` skips them)."""
        return self._cap  # type: ignore[attr-defined,no-any-return]

    @property
    def pilot_rollouts(self) -> int:
        """Rollouts the pilot hands out: Σ ``pilot_counts``, pilot·B unless questions skip it."""
        return self._pilot_rollouts  # type: ignore[attr-defined,no-any-return]

    @property
    def unit_rounds(self) -> bool:
        """True when every decision hands out one rollout (R = 1, no round schedule)."""
        return self.round_size == 1 and not self.round_schedule

    @property
    def group_size(self) -> float:
        """G = N / B, the uniform group size of the same budget."""
        return self.total_budget / self.num_questions

    def replace(self, **changes: Any) -> AllocationParams:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable fields (tuples become lists; ``round_schedule`` only when
        set)."""
        out = dataclasses.asdict(self)
        if self.round_schedule:
            out["round_schedule"] = list(self.round_schedule)
        else:  # equal rounds: the dict of params saved before schedules existed
            del out["round_schedule"]
        if not self.pilot_threshold:  # likewise before the selective pilot
            del out["pilot_threshold"]
        for key in ("prior_alpha", "prior_beta"):
            if isinstance(out[key], tuple):
                out[key] = list(out[key])
        return out


def pilot_counts(params: AllocationParams) -> NDArray[np.int64]:
    """The pilot's rollouts per question (read-only, [B]): ``pilot`` each, 0 for a question
    ``pilot_threshold`` skips.

    >>> pilot_counts(AllocationParams(num_questions=3, prior_alpha=(1.0, 1e-3, 1e3),
    ...                               prior_beta=(1.0, 1e3, 1e-3), pilot=2, pilot_threshold=0.01))
    array([2, 0, 0])
    """
    return params._pilot_counts  # type: ignore[attr-defined,no-any-return]


def distinct_priors(params: AllocationParams) -> list[tuple[float, float, int, int]]:
    """(alpha, beta, questions, pilot) per distinct prior, sorted: what the solvers group by (a
    question's pilot is a function of its prior, ``pilot_counts``)."""
    a, b = prior_arrays(params)
    found: dict[tuple[float, float], list[int]] = {}
    for key, pilot in zip(zip(a.tolist(), b.tolist(), strict=True), pilot_counts(params).tolist(),
                          strict=True):  # fmt: skip
        found.setdefault(key, [0, int(pilot)])[0] += 1
    return [(ai, bi, n, pilot) for (ai, bi), (n, pilot) in sorted(found.items())]


def prior_arrays(params: AllocationParams) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The prior as two read-only float64 arrays of shape [B]."""
    a, b, _, _ = params._priors  # type: ignore[attr-defined]
    return a, b


_ONE32 = np.float32(1.0)


def _frozen(arr: NDArray[Any]) -> NDArray[Any]:
    arr.flags.writeable = False
    return arr


class AllocationState(NamedTuple):
    """Counts so far: ``successes[B]``, ``failures[B]`` (read-only int64 arrays).

    Immutable: build states with ``initial_state``, ``make_state``, ``apply`` and
    ``apply_counts``; the derived ``rollouts`` (n_i = s_i + f_i) and ``spent`` (Σ n_i) are
    computed once, there.
    """

    successes: NDArray[np.int64]
    failures: NDArray[np.int64]
    rollouts: NDArray[np.int64]
    spent: int

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AllocationState):
            return NotImplemented
        return bool(
            np.array_equal(self.successes, other.successes)
            and np.array_equal(self.failures, other.failures)
        )

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq


def _state(s: NDArray[np.int64], f: NDArray[np.int64]) -> AllocationState:
    n = s + f
    return AllocationState(_frozen(s), _frozen(f), _frozen(n), int(n.sum()))


def initial_state(params: AllocationParams) -> AllocationState:
    """All counts zero: the state before any pilot."""
    B = params.num_questions
    return _state(np.zeros(B, dtype=np.int64), np.zeros(B, dtype=np.int64))


def make_state(
    params: AllocationParams, successes: ArrayLike, failures: ArrayLike
) -> AllocationState:
    """A state from given counts, checked against the params (shape, sign, budget, cap)."""
    s = np.array(successes, dtype=np.int64).reshape(-1)
    f = np.array(failures, dtype=np.int64).reshape(-1)
    B = params.num_questions
    if s.shape != (B,) or f.shape != (B,):
        raise ValueError(f"counts must have shape ({B},), got {s.shape} and {f.shape}")
    if np.any(s < 0) or np.any(f < 0):
        raise ValueError("counts must be non-negative")
    if int(s.sum() + f.sum()) > params.total_budget:
        raise ValueError(f"counts spend {int(s.sum() + f.sum())} > budget {params.total_budget}")
    if np.any(s + f > params.cap):
        raise ValueError(f"a question exceeds the cap of {params.cap} rollouts")
    return _state(s, f)


def budget_left(params: AllocationParams, state: AllocationState) -> int:
    """Rollouts still to hand out: N − Σ(s + f)."""
    return params.total_budget - state.spent


def is_done(params: AllocationParams, state: AllocationState) -> bool:
    """True once the whole budget is spent."""
    return budget_left(params, state) == 0


def step_round_size(
    budget: int,
    batch: int,
    *,
    adaptive: bool,
    round_size: int | None = None,
    rounds: int | None = None,
) -> int:
    """R of one training step, the one rule the trainer and the simulator share: ``round_size``
    when given; else ceil(N / ``rounds``) for ``rounds`` equal rounds; else one rollout per
    prompt (B) for an allocator that reads outcomes, and the whole budget N in one round for an
    outcome-blind one (the same split, one generation call).

    >>> step_round_size(512, 64, adaptive=True), step_round_size(512, 64, adaptive=False)
    (64, 512)
    >>> step_round_size(512, 64, adaptive=True, rounds=3)
    171
    """
    if round_size is not None:
        return int(round_size)
    if rounds is not None:
        return -(-int(budget) // int(rounds))
    return int(batch) if adaptive else int(budget)


def step_round_plan(
    budget: int,
    batch: int,
    *,
    adaptive: bool,
    round_size: int | None = None,
    rounds: int | None = None,
    round_schedule: str | tuple[int, ...] | None = None,
    pilot_rollouts: int = 0,
) -> tuple[int, tuple[int, ...]]:
    """``(R, schedule)`` of one training step, the rule the trainer and the simulator share:
    with ``round_schedule`` (a spec for ``parse_round_schedule``, resolved against the rollouts
    after the pilot, ``budget − pilot_rollouts``) an adaptive allocator gets that schedule and
    an outcome-blind one the whole budget in one round; otherwise ``step_round_size`` and no
    schedule. Give at most one of ``round_size``, ``rounds``, ``round_schedule``.

    >>> step_round_plan(512, 64, adaptive=True, round_schedule="384,128")
    (384, (384, 128))
    >>> step_round_plan(512, 64, adaptive=False, round_schedule="384,128")
    (512, ())
    """
    if round_schedule is None:
        R = step_round_size(budget, batch, adaptive=adaptive, round_size=round_size, rounds=rounds)
        return R, ()
    if round_size is not None or rounds is not None:
        raise ValueError(
            f"round_schedule ({round_schedule!r}) is set beside round_size ({round_size}) or "
            f"rounds ({rounds}): give one of the three"
        )
    if not adaptive:
        return int(budget), ()
    schedule = parse_round_schedule(round_schedule, int(budget) - int(pilot_rollouts))
    return schedule[0], schedule if len(schedule) > 1 else ()


def round_size_at(params: AllocationParams, spent: int) -> int:
    """Rollouts the decision taken with ``spent`` rollouts spent hands out: min(R, budget left)
    for equal rounds; with a ``round_schedule``, ``schedule[k]`` for the k-th round after the
    pilot (the last entry repeating), capped by the budget left. In rounds mode the first round
    after a pilot that questions skipped (``pilot_threshold``) also hands out the rollouts they
    skipped, so the rounds after it are those of the whole pilot.

    In rounds mode every decision hands out exactly this many rollouts (the allocation
    contract), so the rollouts spent tell which round comes next: the round counter is Σ n,
    and the observation (``budget_left``) carries it to every allocator.
    """
    left = params.total_budget - int(spent)
    planned = params.pilot * params.num_questions  # the whole pilot
    done = int(spent) - planned
    skipped = params._pilot_skipped  # type: ignore[attr-defined]
    if skipped and params.mode == "rounds" and params.pilot_rollouts <= int(spent) < planned:
        # right after a pilot that some questions skipped
        first = params.round_schedule[0] if params.round_schedule else params.round_size
        return min(first - done, left)
    if not params.round_schedule:
        return min(params.round_size, left)
    return min(schedule_round_size(params.round_schedule, done), left)


def next_round_size(params: AllocationParams, state: AllocationState) -> int:
    """Rollouts the next decision hands out: min(R, budget left), or the schedule's next round
    (``round_size_at``)."""
    if not params.round_schedule and not params._pilot_skipped:  # type: ignore[attr-defined]
        return min(params.round_size, budget_left(params, state))
    return round_size_at(params, state.spent)


def capacity(params: AllocationParams, state: AllocationState) -> NDArray[np.int64]:
    """Rollouts each question can still take under the cap."""
    return np.asarray(params.cap - state.rollouts, dtype=np.int64)


def feasible(params: AllocationParams, state: AllocationState) -> NDArray[np.bool_]:
    """Questions that can take one more rollout (below the cap)."""
    return capacity(params, state) > 0


def posterior(
    params: AllocationParams, state: AllocationState
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Posterior Beta parameters (alpha + s, beta + f) as float64 arrays [B]."""
    a0, b0 = prior_arrays(params)
    return a0 + state.successes, b0 + state.failures


def posterior_mean(alpha: Any, beta: Any, successes: Any = 0, failures: Any = 0) -> Any:
    """Posterior mean of a pass rate, (α + s) / (α + β + s + f), for prior Beta(α, β) and counts
    (s, f); floats or numpy arrays (broadcast).

    The one definition of the empty case: with no data (s = f = 0, the defaults) the posterior
    mean is the prior mean α / (α + β), never 0 or NaN. It is also the posterior-predictive
    probability that the next rollout succeeds.
    """
    return (alpha + successes) / (alpha + beta + successes + failures)


#: The posterior-predictive success probability is the posterior mean (kept as a second name).
success_probability = posterior_mean


def failure_probability(alpha: Any, beta: Any, successes: Any = 0, failures: Any = 0) -> Any:
    """Posterior-predictive probability that the next rollout fails, (β + f) / (α + β + s + f),
    i.e. 1 − ``posterior_mean`` (computed without the cancellation); same empty case."""
    return (beta + failures) / (alpha + beta + successes + failures)


def beta_learnability(alpha: Any, beta: Any) -> Any:
    """E[p(1 − p)] under Beta(α, β) = αβ / ((α+β)(α+β+1)): the posterior-expected Bernoulli
    variance; floats or numpy arrays (broadcast)."""
    t = alpha + beta
    return alpha * beta / (t * (t + 1.0))


def expected_posterior_variance(alpha: Any, beta: Any, more: Any = 0) -> Any:
    """Expected variance of the pass rate's posterior after ``more`` = m further rollouts, for the
    current Beta(α, β) (posterior parameters): E[p(1 − p)] / (α + β + m).

    With m = 0 it is the variance of Beta(α, β) itself; the (m+1)-th rollout removes
    E[p(1 − p)] / ((α + β + m)(α + β + m + 1)) of it. Floats or numpy arrays (broadcast).
    """
    return beta_learnability(alpha, beta) / (alpha + beta + more)


def variance_reduction(alpha: Any, beta: Any, more: Any = 0) -> Any:
    """Expected posterior variance removed by the (m+1)-th further rollout, ``more`` = m:
    E[p(1 − p)] / ((t + m)(t + m + 1)), t = α + β — the step
    ``expected_posterior_variance(α, β, m) − expected_posterior_variance(α, β, m + 1)``."""
    t = alpha + beta
    return beta_learnability(alpha, beta) / ((t + more) * (t + more + 1.0))


#: Relative tolerance of ``prior_matches``: eight half-ulps of float32, the precision in which an
#: observation carries alpha = prior + successes (and beta = prior + failures).
PRIOR_RTOL = 2.0**-21


def prior_matches(
    alpha: Any,
    beta: Any,
    observed_alpha: Any,
    observed_beta: Any,
    successes: Any = 0,
    failures: Any = 0,
) -> Any:
    """Whether an observed prior equals a given prior, elementwise (bool or bool array).

    The one answer to "is the prior in this observation the params' prior?": an observation
    holds alpha = α + s in float32, so the prior read back from it (alpha − s) is exact only to
    within half an ulp of α + s. Two priors match when they differ by at most ``PRIOR_RTOL``
    times (α + counts) in each parameter, α, β being the reference prior; with no counts (the
    defaults) it compares two float64 priors to the same relative tolerance. Floats or numpy
    arrays (broadcast).
    """
    # Plain operators: scalars stay Python floats (a hot path of sequential decisions).
    ok_a = abs(observed_alpha - alpha) <= PRIOR_RTOL * (alpha + successes)
    return ok_a & (abs(observed_beta - beta) <= PRIOR_RTOL * (beta + failures))


def predictive(params: AllocationParams, state: AllocationState) -> NDArray[np.float64]:
    """Posterior-predictive probability that the next rollout of each question succeeds."""
    a0, b0 = prior_arrays(params)
    return np.asarray(posterior_mean(a0, b0, state.successes, state.failures))


def posterior_variance(params: AllocationParams, state: AllocationState) -> NDArray[np.float64]:
    """Variance of each question's posterior Beta, E[p(1 − p)] / (α + β)."""
    a, b = posterior(params, state)
    return np.asarray(expected_posterior_variance(a, b))


def question_utilities(params: AllocationParams, state: AllocationState) -> NDArray[np.float64]:
    """u(s_i, f_i) for each question."""
    return np.asarray(
        get_utility(params.utility)(state.successes, state.failures), dtype=np.float64
    )


def question_utility(params: AllocationParams, state: AllocationState, question: int) -> float:
    """u(s_q, f_q) of one question (cheaper than ``question_utilities`` when one count moved):
    the utility's own value at those counts, remembered per (utility, s, f)."""
    q = question
    return _count_utility(
        get_utility(params.utility), int(state.successes[q]), int(state.failures[q])
    )


@functools.lru_cache(maxsize=1 << 16)
def _count_utility(fn: Any, s: int, f: int) -> float:
    """u(s, f) computed once by the utility itself (keyed by the function: a utility registered
    again under the same name is a new key)."""
    return float(fn(np.array([s], dtype=np.int64), np.array([f], dtype=np.int64))[0])


def utility_value(params: AllocationParams, state: AllocationState) -> float:
    """Training utility Σ_i u(s_i, f_i) of the state's counts."""
    return float(np.add.reduce(question_utilities(params, state)))


def apply(
    params: AllocationParams, state: AllocationState, question: int, outcome: bool | int
) -> AllocationState:
    """One rollout on ``question`` with ``outcome`` (1 success, 0 failure): a new state."""
    B = params.num_questions
    if not 0 <= question < B:
        raise ValueError(f"question {question} is outside 0..{B - 1}")
    if state.spent >= params.total_budget:
        raise ValueError("the budget is already spent: reset the episode")
    if state.rollouts[question] >= params.cap:
        raise ValueError(f"question {question} is at its cap of {params.cap} rollouts")
    n = state.rollouts.copy()
    n[question] += 1
    if outcome:
        s = state.successes.copy()
        s[question] += 1
        return AllocationState(_frozen(s), state.failures, _frozen(n), state.spent + 1)
    f = state.failures.copy()
    f[question] += 1
    return AllocationState(state.successes, _frozen(f), _frozen(n), state.spent + 1)


def apply_counts(
    params: AllocationParams,
    state: AllocationState,
    counts: ArrayLike,
    successes: ArrayLike,
) -> AllocationState:
    """Apply a whole round: ``counts[i]`` rollouts on question i, ``successes[i]`` of them good."""
    c = np.asarray(counts, dtype=np.int64)
    k = np.asarray(successes, dtype=np.int64)
    B = params.num_questions
    if c.shape != (B,) or k.shape != (B,):
        raise ValueError(f"counts and successes must have shape ({B},), got {c.shape}, {k.shape}")
    if np.any(c < 0) or np.any(k < 0) or np.any(k > c):
        raise ValueError("need 0 <= successes <= counts for every question")
    if int(c.sum()) > budget_left(params, state):
        raise ValueError(
            f"round of {int(c.sum())} rollouts exceeds the {budget_left(params, state)} left"
        )
    if np.any(state.rollouts + c > params.cap):
        raise ValueError(f"round pushes a question past its cap of {params.cap} rollouts")
    return advance(state, c, k)


def advance(
    state: AllocationState, counts: NDArray[np.int64], successes: NDArray[np.int64]
) -> AllocationState:
    """``apply_counts`` without its checks, for callers whose counts are valid by construction
    (the rounds env: counts from ``decode_action``, successes drawn from them)."""
    return _state(state.successes + successes, state.failures + (counts - successes))


def observation_space(params: AllocationParams, *, reveal_truth: bool = False) -> spaces.Dict:
    """The flat Dict of 1-D float32 Boxes that ``observe`` returns, with finite bounds."""
    B = params.num_questions
    N = float(params.total_budget)
    hi_ab = float(PRIOR_MAX) + N

    def box(low: float, high: float, n: int = B) -> spaces.Box:
        return spaces.Box(low=low, high=high, shape=(n,), dtype=np.float32)

    parts: dict[str, spaces.Space[Any]] = {
        "alpha": box(0.0, hi_ab),
        "beta": box(0.0, hi_ab),
        "successes": box(0.0, N),
        "rollouts": box(0.0, N),
        "budget_left": box(0.0, N, 1),
        "mean": box(0.0, 1.0),
        "std": box(0.0, 0.5),
    }
    if reveal_truth:
        parts["true_p"] = box(0.0, 1.0)
    return spaces.Dict(parts)


def observe(
    params: AllocationParams, state: AllocationState, true_p: ArrayLike | None = None
) -> dict[str, NDArray[np.float32]]:
    """The observation of ``state``: exactly the env's (keys, shapes, float32), fresh arrays.

    With ``true_p`` given, the observation also carries ``true_p`` (``reveal_truth=True``).
    """
    _, _, a0, b0 = params._priors  # type: ignore[attr-defined]
    s = state.successes.astype(np.float32)
    a = a0 + s
    b = b0 + state.failures.astype(np.float32)
    t = a + b
    mean = a / t  # posterior_mean(a, b), bit for bit (its zero counts add nothing)
    obs = {
        "alpha": a,
        "beta": b,
        "successes": s,
        "rollouts": state.rollouts.astype(np.float32),
        "budget_left": np.array([params._N - state.spent], dtype=np.float32),  # type: ignore[attr-defined]
        "mean": mean,
        "std": np.sqrt(mean * (b / t) / (t + _ONE32)),
    }
    if true_p is not None:
        obs["true_p"] = np.asarray(true_p, dtype=np.float32).copy()
    return obs


def decode_action(
    params: AllocationParams, state: AllocationState, action: ArrayLike
) -> NDArray[np.int64]:
    """Counts for a rounds action: w = (a + 1)/2, split by ``split_round`` under the caps."""
    a = np.asarray(action)
    B = params.num_questions
    if a.shape != (B,):
        raise ValueError(
            f"action {action!r} has shape {a.shape}, but the action space is Box(-1, 1, ({B},)): "
            f"give {B} weights in [-1, 1]"
        )
    try:
        a32 = a.astype(np.float32)
    except (TypeError, ValueError):
        raise ValueError(f"action {action!r} is not numeric: give {B} weights in [-1, 1]") from None
    if np.any(np.isnan(a32)) or np.any(a32 < -1.0) or np.any(a32 > 1.0):
        raise ValueError(
            f"action {action!r} is outside Box(-1, 1, ({B},)) or contains NaN: "
            "clip the weights to [-1, 1] (SB3 clips Box actions before stepping)"
        )
    w = (a32.astype(np.float64) + 1.0) / 2.0
    return split_round(w, next_round_size(params, state), capacity(params, state))
