"""One step's allocation rounds, written once: the plan of a step and the loop that runs it.

A GRPO step is an allocation episode. Whoever runs one — our trainer (and through it the live env
``AdaRoll/GRPOTraining-v0``), the TRL subclass, ``adaroll bench --from-run``'s simulator —
does the same things in the same order:

1. **plan** (once per run): the step's setting without its priors — questions, budget, pilot,
   caps, utility and the round-size rule (``plan_step``: ``round_size``, ``rounds`` or a round
   schedule, ``"auto"`` resolved, outcome-blind allocators in one round, shares per process);
2. **params** (each step): the plan with this step's priors (``StepPlan.params``), the one
   builder of a step's ``AllocationParams``;
3. **rounds** (``RoundLoop``): reset the allocator; the pilot; then until the budget is spent,
   allocate on the observation, check the decision against the allocation contract
   (``agents.contract.check_allocation``), generate and score it through the caller's
   ``generate(counts) -> successes`` callable, and apply the outcomes to the state.

The caller keeps what is its own: where the priors come from and where the final counts go
(the trainer's belief store), how a round is generated and scored (an engine and a verifier,
TRL's ``_generate``, a binomial draw), and what it reports.

>>> import numpy as np
>>> plan = plan_step(budget=16, batch=4, adaptive=True, round_schedule="0.5,0.5")
>>> params = plan.params(1.0, 1.0)
>>> rng = np.random.default_rng(0)
>>> loop = RoundLoop(params, lambda counts: rng.binomial(counts, 0.5), allocator=None)
>>> successes = loop.play(np.array([2, 2, 2, 2]))
>>> (loop.next_round_size, loop.budget_left, loop.done)
(8, 8, False)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from adaroll_env import model as am
from adaroll_env.actions import encode_counts
from adaroll_env.schedules import resolve_schedule_spec
from agents.contract import check_allocation

__all__ = [
    "EnvRoundLoop",
    "GenerateAndScore",
    "RoundLoop",
    "StepPlan",
    "plan_step",
    "resolve_pilot",
]

#: ``generate(counts)``: generate ``counts[i]`` rollouts of question ``i``, score them, return the
#: successes per question (int, shape [B])
GenerateAndScore = Callable[[NDArray[np.int64]], Any]


@dataclass(frozen=True)
class StepPlan:
    """A step's allocation setting without its priors; ``params`` adds them.

    ``round_size`` and ``round_schedule`` follow ``AllocationParams`` (an empty schedule: equal
    rounds of ``round_size``)."""

    num_questions: int
    budget: int
    pilot: int
    max_group: int | None
    utility: str
    round_size: int
    round_schedule: tuple[int, ...] = ()
    pilot_threshold: float = 0.0

    def params(self, prior_alpha: Any = 1.0, prior_beta: Any = 1.0) -> am.AllocationParams:
        """The step's ``AllocationParams`` with these priors (one per question, or one for all)."""
        return am.AllocationParams(
            num_questions=self.num_questions,
            budget=self.budget,
            prior_alpha=prior_alpha,
            prior_beta=prior_beta,
            pilot=self.pilot,
            max_group=self.max_group,
            mode="rounds",
            round_size=self.round_size,
            utility=self.utility,
            round_schedule=self.round_schedule,
            pilot_threshold=self.pilot_threshold,
        )

    def share(self, world: int) -> StepPlan:
        """Each of ``world`` processes' share: its questions, budget and part of every round
        (``plan_step`` checked that they divide)."""
        if world == 1:
            return self
        return StepPlan(
            num_questions=self.num_questions // world,
            budget=self.budget // world,
            pilot=self.pilot,
            max_group=self.max_group,
            utility=self.utility,
            round_size=max(1, self.round_size // world),
            round_schedule=tuple(r // world for r in self.round_schedule),
            pilot_threshold=self.pilot_threshold,
        )


def resolve_pilot(
    pilot: int | None,
    allocator: Any,
    *,
    budget: int,
    questions: int,
    round_size: int | None = None,
    rounds: int | None = None,
    round_schedule: str | tuple[int, ...] | None = "auto",
) -> int:
    """The pilot a trainer runs: ``pilot`` when given, else the allocator's own
    ``default_pilot`` (a spec through ``agents.registry.default_pilot``, an instance through its
    attribute; 0 without one), lowered to spend at most a quarter of the budget (the share
    ``bamdp``'s pilot of 2 had at 8 rollouts a prompt, where it was measured): at most
    ``budget // (4 * questions)``. The allocator's pilot comes with the default rounds only
    (``round_schedule="auto"``, no ``round_size``, no ``rounds``): a given round size, number of
    rounds or schedule describes the whole step, and an unset pilot is then 0.

    >>> resolve_pilot(None, "bamdp", budget=512, questions=64)
    2
    >>> resolve_pilot(None, "uniform", budget=512, questions=64)
    0
    >>> resolve_pilot(None, "bamdp", budget=256, questions=64)  # 4 a prompt: a quarter is 1
    1
    >>> resolve_pilot(3, "uniform", budget=512, questions=64)
    3
    >>> resolve_pilot(None, "bamdp", budget=512, questions=64, round_schedule="384,128")
    0
    """
    if pilot is not None:
        return int(pilot)
    if round_schedule != "auto" or round_size is not None or rounds is not None:
        return 0
    if isinstance(allocator, str):
        from agents.registry import default_pilot

        wanted = default_pilot(allocator)
    else:
        wanted = int(getattr(allocator, "default_pilot", 0) or 0)
    if wanted <= 0:
        return 0
    fits = int(budget) // (4 * max(1, int(questions)))
    return max(0, min(wanted, fits))


def plan_step(
    *,
    budget: int,
    batch: int,
    adaptive: bool,
    questions: int | None = None,
    pilot: int = 0,
    pilot_threshold: float = 0.0,
    max_group: int | None = None,
    utility: str = "snr(8)",
    round_size: int | None = None,
    rounds: int | None = None,
    round_schedule: str | tuple[int, ...] | None = None,
    allocator: Any = None,
    world: int = 1,
) -> StepPlan:
    """The plan of a step of ``budget`` rollouts over ``questions`` prompts (default ``batch``;
    more with a pool), the round-size rule in one place.

    ``round_schedule="auto"`` is resolved by ``adaroll_env.schedules.resolve_schedule_spec``
    (two equal rounds unless ``rounds`` or ``round_size`` is given, or ``allocator`` is a learned
    ``sb3:`` spec, or one whose class sets ``one_round``: one round); then
    ``adaroll_env.model.step_round_plan`` gives the first round's size and the schedule (an
    outcome-blind allocator: the whole budget in one round). A round never
    exceeds the budget. With ``world`` processes every round of a schedule must divide among them
    (each hands out its share); ``StepPlan.share`` gives a process's part. ``pilot_threshold``
    (``AllocationParams``): questions whose prior makes the pilot's outcome nearly certain skip
    it, and the first round after it hands out what they skipped.

    >>> plan_step(budget=512, batch=64, adaptive=True, round_schedule="384,128").round_schedule
    (384, 128)
    >>> plan_step(budget=512, batch=64, adaptive=True, round_schedule="auto").round_size
    256
    >>> plan_step(budget=512, batch=64, adaptive=False, round_schedule="auto").round_size
    512
    >>> plan_step(budget=512, batch=64, adaptive=True, round_schedule=None).round_size
    64
    >>> plan_step(budget=512, batch=64, questions=128, adaptive=True, round_schedule="auto",
    ...           allocator="prior_filter").round_size
    512
    """
    from agents.registry import is_one_round

    Q = int(batch if questions is None else questions)
    spec = resolve_schedule_spec(
        round_schedule,  # type: ignore[arg-type]
        rounds=rounds,
        round_size=round_size,
        budget=int(budget) - int(pilot) * Q,
        allocator=allocator,
        one_round=is_one_round(allocator),
    )
    R, schedule = am.step_round_plan(
        int(budget),
        int(batch),
        adaptive=adaptive,
        round_size=round_size,
        rounds=rounds,
        round_schedule=spec,
        pilot_rollouts=int(pilot) * Q,
    )
    if world > 1 and any(r % world for r in schedule):
        raise ValueError(
            f"round_schedule {spec!r} has rounds {list(schedule)} that do not divide "
            f"among {world} processes: give round sizes that are multiples of {world} (each "
            "process hands out its share of every round)"
        )
    return StepPlan(
        num_questions=Q,
        budget=int(budget),
        pilot=int(pilot),
        max_group=max_group,
        utility=utility,
        round_size=min(int(R), int(budget)),
        round_schedule=schedule,
        pilot_threshold=float(pilot_threshold),
    )


class RoundLoop:
    """One step's rounds: the allocator reset, the pilot, then decide → check → generate → apply
    until the budget is spent.

    Args:
        params: the step's ``AllocationParams`` (``StepPlan.params``).
        generate: ``generate(counts) -> successes``, the caller's generation and scoring.
        allocator: reset here with ``seed`` and asked on each round (``decide``); None when the
            caller decides itself (the live env's agent, a process that receives the decision).
        seed: the allocator's seed for this step.
        name: the allocator as the user knows it, named in contract errors.
        truth: the hidden pass rates shown to allocators that read them (``oracle``), or None.
        state: where the step starts (default: nothing spent); a Gymnasium env's state after
            ``reset``, whose pilot is then already spent (the simulated benchmark).

    ``alloc_seconds`` accumulates the time spent inside the allocator (reset and decisions);
    ``decisions`` counts the rounds decided, ``rounds`` the generate calls (pilot included).
    ``run()`` does the whole step; ``pilot``, ``decide`` and ``play`` are its parts, for callers
    that interleave their own work (the trainer's step API, TRL's broadcast of a decision).
    """

    def __init__(
        self,
        params: am.AllocationParams,
        generate: GenerateAndScore,
        *,
        allocator: Any = None,
        seed: int | None = None,
        name: str | None = None,
        truth: Any = None,
        state: am.AllocationState | None = None,
    ) -> None:
        self.params = params
        self.state = am.initial_state(params) if state is None else state
        self.generate = generate
        self.allocator = allocator
        self.name = name if name is not None else _name(allocator)
        self.truth = truth
        self.alloc_seconds = 0.0
        self.decisions = 0
        self.rounds = 0
        #: the counts of the last round generated (pilot included)
        self.last_counts = np.zeros(params.num_questions, dtype=np.int64)
        if allocator is not None:
            t = time.perf_counter()
            allocator.reset(params, seed=seed)
            self.alloc_seconds += time.perf_counter() - t

    @property
    def done(self) -> bool:
        """True once the budget is spent."""
        return am.is_done(self.params, self.state)

    @property
    def budget_left(self) -> int:
        """Rollouts still to hand out."""
        return am.budget_left(self.params, self.state)

    @property
    def next_round_size(self) -> int:
        """What the next decision must hand out (0 when done)."""
        return am.next_round_size(self.params, self.state) if not self.done else 0

    def observe(self) -> dict[str, NDArray[np.float32]]:
        """The observation an allocator decides on (``adaroll_env.model.observe``)."""
        return am.observe(self.params, self.state, self.truth)

    def pilot(self) -> NDArray[np.int64] | None:
        """Generate the pilot (``params.pilot`` rollouts of every question it does not skip,
        ``adaroll_env.model.pilot_counts``) if there is one and nothing is spent yet; its
        successes, or None."""
        p = self.params
        if p.pilot_rollouts <= 0 or self.state.spent:
            return None
        return self._apply(am.pilot_counts(p))

    def decide(self) -> NDArray[np.int64]:
        """The allocator's decision for the next round, checked against the contract."""
        if self.allocator is None:
            raise RuntimeError("this RoundLoop has no allocator: pass counts to play()")
        t = time.perf_counter()
        counts = self.allocator.allocate(self.observe())
        self.alloc_seconds += time.perf_counter() - t
        return self.check(counts)

    def check(self, counts: Any, *, name: str | None = None) -> NDArray[np.int64]:
        """``counts`` as int64 if they are a valid decision for the next round, else
        ``agents.AllocationError`` naming ``name`` (default: the allocator)."""
        p, s = self.params, self.state
        round_size = am.next_round_size(p, s)
        if round_size == 1 and isinstance(counts, np.ndarray) and counts.dtype == np.int64:
            # Fast path of the same rules for one rollout: exactly one 1, to a question with room.
            nz = np.flatnonzero(counts)
            if (
                counts.shape == (p.num_questions,)
                and nz.size == 1
                and counts[nz[0]] == 1
                and s.rollouts[nz[0]] < p.cap
            ):
                return counts
        return check_allocation(
            name if name is not None else self.name,
            counts,
            round_size=round_size,
            spent=s.rollouts,
            caps=p.cap,
        )

    def play(self, counts: Any, *, name: str | None = None) -> NDArray[np.int64]:
        """Check ``counts`` (naming ``name``), generate and score them, apply the outcomes;
        returns the successes per question."""
        self.decisions += 1
        return self._apply(self.check(counts, name=name))

    def run(self) -> am.AllocationState:
        """The whole step: pilot, then rounds until the budget is spent; the final state."""
        self.pilot()
        while not self.done:
            self._apply(self.decide())
            self.decisions += 1
        return self.state

    def _apply(self, counts: NDArray[np.int64]) -> NDArray[np.int64]:
        successes = np.asarray(self.generate(counts), dtype=np.int64)
        self.last_counts = counts
        self.state = am.apply_counts(self.params, self.state, counts, successes)
        self.rounds += 1
        return successes


class EnvRoundLoop(RoundLoop):
    """The round loop over a simulated allocation env (``AdaRoll/BetaBernoulli-v0`` or
    ``AdaRoll/BetaBernoulliRounds-v0``) just ``reset``: the env holds the state, draws the
    outcomes and pays the rewards; the loop asks the allocator and checks its decisions.

    Each round is one ``env.step``: the question index in the one-rollout env, the counts as
    ``encode_counts`` in the rounds env. ``total_reward`` sums the rewards (the pilot's utility
    included, paid with the first step), ``obs`` and ``info`` are the env's last.

    >>> import gymnasium as gym, adaroll_env, agents
    >>> env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=4, budget=16)
    >>> obs, info = env.reset(seed=0)
    >>> loop = EnvRoundLoop(env, allocator=agents.make_allocator("uniform", env), seed=0)
    >>> loop.run().rollouts.tolist(), loop.rounds
    ([4, 4, 4, 4], 4)
    """

    def __init__(self, env: Any, *, allocator: Any, seed: int | None = None) -> None:
        self.env = env
        base = env.unwrapped
        self._base = base
        self._sequential = base.episode_params.mode == "sequential"
        self.total_reward = 0.0
        self.obs: dict[str, Any] = base._obs()
        self.info: dict[str, Any] = base._info()
        super().__init__(
            base.episode_params,
            self._step,
            allocator=allocator,
            seed=seed,
            truth=base.true_p if base.reveal_truth else None,
            state=base.state,
        )

    def observe(self) -> dict[str, NDArray[np.float32]]:
        """The env's last observation."""
        return self.obs

    def pilot(self) -> NDArray[np.int64] | None:
        """Nothing: the env ran the pilot in ``reset``."""
        return None

    def _step(self, counts: NDArray[np.int64]) -> NDArray[np.int64]:
        if self._sequential:
            q = int(np.flatnonzero(counts)[0])
            before = int(self._base.state.successes[q])
            self._env_step(q)
            return counts * (int(self._base.state.successes[q]) - before)
        before_all = self._base.state.successes
        self._env_step(encode_counts(counts))
        return np.asarray(self._base.state.successes - before_all, dtype=np.int64)

    def _env_step(self, action: Any) -> None:
        self.obs, reward, _, _, self.info = self.env.step(action)
        self.total_reward += float(reward)

    def _apply(self, counts: NDArray[np.int64]) -> NDArray[np.int64]:
        successes = self._step(counts)
        self.last_counts = counts
        self.state = self._base.state
        self.rounds += 1
        return successes


def _name(allocator: Any) -> str:
    if allocator is None:
        return "passed to play()"
    kind = type(allocator).__name__
    return f"{str(getattr(allocator, 'name', kind))!r} ({kind})"
