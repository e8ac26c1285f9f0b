"""The simulated allocation environments ``AdaRoll/BetaBernoulli-v0`` and ``-Rounds-v0``.

Both are thin wrappers around the pure model of ``adaroll_env.model``: they draw hidden pass rates
from a difficulty profile, sample rollout outcomes from them, and report the increase of training
utility as reward.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Literal, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from adaroll_env import model
from adaroll_env.actions import encoded_counts
from adaroll_env.errors import check_keywords, unknown_name
from adaroll_env.model import AllocationParams, AllocationState
from adaroll_env.priors import (
    DEFAULT_PROFILE,
    DifficultySpec,
    apply_drift,
    resolve_beliefs,
    resolve_difficulty,
)
from adaroll_env.schedules import parse_round_schedule

RewardMode = Literal["dense", "terminal"]
InvalidAction = Literal["raise", "redirect"]


class _SimulatedAllocationEnv(gym.Env[dict[str, NDArray[np.float32]], Any]):
    """Shared machinery of the two simulated envs (the model calls, pass rates, reward)."""

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012
    _mode: model.Mode = "sequential"

    def __init__(
        self,
        *,
        num_questions: int = 16,
        budget: int | None = None,
        prior_alpha: float | tuple[float, ...] | None = None,
        prior_beta: float | tuple[float, ...] | None = None,
        pilot: int = 0,
        pilot_threshold: float = 0.0,
        max_group: int | None = None,
        round_size: int = 1,
        round_schedule: str | tuple[int, ...] = (),
        utility: str = "snr(8)",
        difficulty: DifficultySpec = DEFAULT_PROFILE,
        belief: str | tuple[float, float] = "matched",
        drift: float = 0.0,
        reward_mode: RewardMode = "dense",
        reveal_truth: bool = False,
        outcomes: str = "binomial",
        render_mode: str | None = None,
    ) -> None:
        self.difficulty = resolve_difficulty(difficulty)
        if outcomes not in OUTCOMES:
            raise ValueError(
                f"outcomes must be one of {list(OUTCOMES)}, got {outcomes!r}: 'binomial' draws "
                "each round's successes from the env's stream (the default), 'common' gives each "
                "question's k-th rollout the same uniform draw whichever policy asks for it"
            )
        self.outcomes = outcomes
        self._common_draws = outcomes == "common"  # read on every step
        a, b = resolve_beliefs(self.difficulty, belief, prior_alpha, prior_beta)
        if isinstance(round_schedule, str):  # a spec: counts summing to N − pilot·B, or fractions
            N = 8 * num_questions if budget is None else budget
            round_schedule = parse_round_schedule(round_schedule, N - pilot * num_questions)
        self.params = AllocationParams(
            num_questions=num_questions,
            budget=budget,
            prior_alpha=a,
            prior_beta=b,
            pilot=pilot,
            pilot_threshold=pilot_threshold,
            max_group=max_group,
            mode=self._mode,
            round_size=round_size,
            utility=utility,
            round_schedule=tuple(round_schedule),
        )
        if reward_mode not in ("dense", "terminal"):
            raise ValueError(f"reward_mode must be 'dense' or 'terminal', got {reward_mode!r}")
        if isinstance(drift, bool) or not (
            isinstance(drift, (int, float, np.integer, np.floating)) and math.isfinite(drift)
        ):
            raise ValueError(
                f"drift must be a finite float (logit shift per episode), got {drift!r}"
            )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode {render_mode!r} is not supported: use one of "
                f"{self.metadata['render_modes']} or None"
            )
        self.drift = float(drift)
        self.reward_mode: RewardMode = reward_mode
        self.reveal_truth = bool(reveal_truth)
        self.render_mode = render_mode
        self.observation_space = model.observation_space(  # type: ignore[assignment]
            self.params, reveal_truth=self.reveal_truth
        )
        self.episode_params = self.params
        self.episode = -1
        self._state: AllocationState = model.initial_state(self.params)
        self._true_p: NDArray[np.float64] = np.zeros(self.params.num_questions)
        self._utility = 0.0
        self._qutil: NDArray[np.float64] = np.zeros(self.params.num_questions)
        self._pending = 0.0  # utility not yet paid out (the pilot's, or all of it if terminal)
        self._redirected = 0
        self._last_counts: NDArray[np.int64] = np.zeros(self.params.num_questions, dtype=np.int64)
        self._last_action: int | None = None

    def _last_round(self) -> NDArray[np.int64]:
        """Rollouts the last step (or the pilot, right after reset) gave each question."""
        return self._last_counts.copy()

    # --- shared pieces of step ------------------------------------------------------------
    def _finish_step(
        self, question: int | None = None
    ) -> tuple[dict[str, NDArray[np.float32]], float, bool, bool, dict]:
        """Reward, termination and info after the state moved; ``question`` when only that
        question's counts changed (the sequential env), so only its utility is recomputed."""
        p = self.episode_params
        state = self._state
        if question is None:
            self._qutil = np.array(model.question_utilities(p, state))
            new_utility = float(np.add.reduce(self._qutil))
            gain = new_utility - self._utility
        else:
            u_q = model.question_utility(p, state, question)
            gain = u_q - float(self._qutil[question])
            self._qutil[question] = u_q
            new_utility = self._utility + gain
        self._utility = new_utility
        terminated = state.spent >= p.total_budget
        if self.reward_mode == "dense":
            reward = gain + self._pending
            self._pending = 0.0
        else:
            self._pending += gain
            reward = self._pending if terminated else 0.0
            if terminated:
                self._pending = 0.0
        return self._obs(), float(reward), terminated, False, self._info()

    def _check_running(self) -> None:
        if self.episode < 0:
            raise RuntimeError("call reset() before step()")
        if self._state.spent >= self.episode_params.total_budget:
            raise RuntimeError("the episode is over (budget spent): call reset() before step()")

    def _obs(self) -> dict[str, NDArray[np.float32]]:
        return model.observe(
            self.episode_params, self._state, self._true_p if self.reveal_truth else None
        )

    def _info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"allocation": self._state.rollouts, "utility": self._utility}
        if self._mode == "sequential":
            info["redirected"] = self._redirected
        if self.reveal_truth:
            info["true_p"] = self._true_p.copy()
        return info

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, NDArray[np.float32]], dict[str, Any]]:
        """Draw the hidden pass rates, run the pilot and return the first observation.

        ``options`` may hold ``prior_alpha`` / ``prior_beta`` (per-question beliefs for this
        episode only) and ``episode`` (the episode index that ``drift`` uses).
        """
        super().reset(seed=seed)
        options = dict(options or {})
        for key in sorted(set(options) - {"prior_alpha", "prior_beta", "episode"}):
            raise unknown_name("reset option", key, ["prior_alpha", "prior_beta", "episode"])
        self.episode = int(options["episode"]) if "episode" in options else self.episode + 1
        changes = {k: options[k] for k in ("prior_alpha", "prior_beta") if k in options}
        self.episode_params = self.params.replace(**changes) if changes else self.params
        p = self.episode_params
        B = p.num_questions
        true_p = self.difficulty.sample(self.np_random, B)
        if self.drift:
            true_p = apply_drift(true_p, self.drift * self.episode)
        self._true_p = np.asarray(true_p, dtype=np.float64)
        self._true_p_list: list[float] = self._true_p.tolist()
        state = model.initial_state(p)
        if self._common_draws:
            self._common = CommonOutcomes(self.np_random, self._true_p)
        if p.pilot_rollouts > 0:
            counts = model.pilot_counts(p)
            state = model.apply_counts(p, state, counts, self._successes(state.rollouts, counts))
        self._state = state
        self._qutil = np.array(model.question_utilities(p, state))
        self._utility = float(np.add.reduce(self._qutil))
        self._pending = self._utility
        self._redirected = 0
        self._last_counts = state.rollouts.copy()
        self._last_action = None
        if self._mode == "sequential" and not self._common_draws:
            self._uniforms: list[float] = self.np_random.random(p.total_budget).tolist()
        return self._obs(), self._info()

    def _successes(self, before: NDArray[np.int64], counts: NDArray[np.int64]) -> NDArray[Any]:
        """Successes of ``counts`` more rollouts per question after ``before`` of them."""
        if self._common_draws:
            return self._common.successes(before, counts)
        return self.np_random.binomial(counts, self._true_p)  # type: ignore[no-any-return]

    def render(self) -> str | None:
        """``render_mode="ansi"``: a table of beliefs and allocations as a string."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi'")
            return None
        return render_table(
            self.episode_params,
            self._state,
            self._true_p if self.reveal_truth else None,
            last_counts=self._last_round(),
            utility=self._utility,
        )

    def close(self) -> None:
        """Nothing to release."""

    def action_masks(self) -> NDArray[np.bool_]:
        """Questions that can take another rollout (those at ``max_group`` are False)."""
        return model.feasible(self.episode_params, self._state)

    @property
    def state(self) -> AllocationState:
        """The current (immutable) allocation state."""
        return self._state

    @property
    def true_p(self) -> NDArray[np.float64]:
        """The hidden pass rates of this episode (a copy; for analysis, not for agents)."""
        return self._true_p.copy()


def render_table(
    params: AllocationParams,
    state: AllocationState,
    true_p: NDArray[np.float64] | None = None,
    *,
    last_counts: NDArray[np.int64] | None = None,
    utility: float | None = None,
) -> str:
    """A plain-text table of each question's belief and allocation."""
    a, b = model.posterior(params, state)
    mean = model.posterior_mean(a, b)
    std = np.sqrt(model.posterior_variance(params, state))
    n = state.rollouts
    header = f"{'q':>4} {'alpha':>8} {'beta':>8} {'mean':>6} {'std':>6} {'s/n':>9} {'last':>5}"
    if true_p is not None:
        header += f" {'true p':>7}"
    lines = [header, "-" * len(header)]
    for i in range(params.num_questions):
        row = (
            f"{i:>4} {a[i]:>8.3g} {b[i]:>8.3g} {mean[i]:>6.3f} {std[i]:>6.3f} "
            f"{f'{state.successes[i]}/{n[i]}':>9} "
            f"{int(last_counts[i]) if last_counts is not None else 0:>5}"
        )
        if true_p is not None:
            row += f" {true_p[i]:>7.3f}"
        lines.append(row)
    left = model.budget_left(params, state)
    u = model.utility_value(params, state) if utility is None else utility
    lines.append(f"budget left {left}/{params.total_budget}   utility ({params.utility}) {u:.4g}")
    return "\n".join(lines) + "\n"


#: how a simulated env draws rollout outcomes (its ``outcomes`` argument)
OUTCOMES = ("binomial", "common")


class CommonOutcomes:
    """Common random numbers for an episode: question i's k-th rollout succeeds iff
    ``u[i, k] < p_i``, with ``u[i, k]`` a uniform fixed by the episode's seed, i and k alone.

    Two policies run on the same seed then see the same outcome wherever they give a question
    the same number of rollouts: placing one rollout elsewhere changes only that rollout, not
    every later draw of the episode (as one ``binomial`` over all questions per round does), so
    their paired difference measures the allocations and not the noise of desynchronised
    streams. Each outcome is still a Bernoulli(p_i) draw, independent of the others. The
    uniforms come in blocks of ``BLOCK`` rollouts per question, block j from a Philox generator
    keyed by the episode's key and j, drawn when a question first reaches it.
    """

    BLOCK = 16

    def __init__(self, rng: np.random.Generator, true_p: NDArray[np.float64]) -> None:
        self.key = int(rng.integers(0, 2**63))
        self.p = true_p
        self.u = np.empty((true_p.size, 0))

    def _reach(self, width: int) -> None:
        while self.u.shape[1] < width:
            j = self.u.shape[1] // self.BLOCK
            g = np.random.Generator(np.random.Philox(key=np.array([self.key, j], dtype=np.uint64)))
            self.u = np.concatenate([self.u, g.random((self.p.size, self.BLOCK))], axis=1)

    def successes(self, before: NDArray[np.int64], counts: NDArray[np.int64]) -> NDArray[Any]:
        """Successes of rollouts ``before[i] .. before[i] + counts[i] − 1`` of each question."""
        end = before + counts
        self._reach(int(end.max(initial=0)))
        cols = np.arange(self.u.shape[1])
        take = (cols >= before[:, None]) & (cols < end[:, None])
        return np.sum(take & (self.u < self.p[:, None]), axis=1)  # type: ignore[no-any-return]

    def outcome(self, question: int, k: int) -> bool:
        """Whether rollout ``k`` (from 0) of ``question`` succeeds."""
        self._reach(k + 1)
        return bool(self.u[question, k] < self.p[question])


def _arguments() -> list[str]:
    """The keyword arguments every simulated env takes (those of the shared ``__init__``)."""
    return [n for n in inspect.signature(_SimulatedAllocationEnv.__init__).parameters][1:]


class BetaBernoulliEnv(_SimulatedAllocationEnv):
    """Sequential rollout allocation with Beta beliefs: one rollout per step.

    ## Description

    One episode is one GRPO step. A batch of ``B`` questions has hidden pass rates ``p_i`` drawn
    from a difficulty profile; the agent holds a ``Beta(alpha_i, beta_i)`` belief over each and
    spends a budget of ``N`` rollouts, one per step, choosing which question gets the next one.
    A rollout on question i succeeds with probability ``p_i``. The episode's return is the
    training utility ``sum_i u(s_i, f_i)`` of the final counts (``snr(8)`` by default: a group
    that is neither all-correct nor all-wrong, i.e. that carries GRPO gradient, counts
    (n−1)²/((n−1)² + 8n), more the deeper it is; ``informative`` counts each such group once).

    ## Action Space

    ``Discrete(B)``: the index of the question that receives the next rollout. A question at
    ``max_group`` is masked (``action_masks()``); choosing it raises ``ValueError`` with
    ``invalid_action="raise"`` (default) or is redirected to the feasible question with the
    largest posterior variance with ``invalid_action="redirect"``.

    ## Observation Space

    A flat ``Dict`` of 1-D float32 ``Box``es:

    | key | shape | meaning |
    |---|---|---|
    | ``alpha`` | (B,) | posterior alpha = prior alpha + successes |
    | ``beta`` | (B,) | posterior beta = prior beta + failures |
    | ``successes`` | (B,) | successes so far |
    | ``rollouts`` | (B,) | rollouts so far (n_i) |
    | ``budget_left`` | (1,) | rollouts still to spend |
    | ``mean`` | (B,) | posterior mean |
    | ``std`` | (B,) | posterior standard deviation |
    | ``true_p`` | (B,) | hidden pass rates (only with ``reveal_truth=True``) |

    ## Rewards

    The increase of training utility the step caused; the first step also carries the pilot's
    utility, so the episode return equals the final utility. ``reward_mode="terminal"`` pays
    everything on the last step.

    ## Starting State

    Pass rates are drawn from ``difficulty`` (with ``drift``, shifted up in logit space by
    ``drift·episode``); every question then receives ``pilot`` rollouts, already visible in the
    first observation (``budget_left = N − pilot·B``).

    ## Episode End

    Terminated when the budget is spent (after ``N − pilot·B`` steps). Never truncated.

    ## Arguments

    ``num_questions`` (16), ``budget`` (8·B), ``pilot`` (0), ``pilot_threshold`` (0.0: questions
    whose prior makes the pilot's outcome nearly certain skip it), ``max_group`` (None),
    ``utility`` ("snr(8)"), ``difficulty`` ("rlvr"), ``belief`` ("matched": the Beta fitted
    to ``difficulty``; or a pair), ``prior_alpha`` / ``prior_beta`` (override ``belief``),
    ``drift`` (0.0), ``reward_mode`` ("dense"), ``reveal_truth`` (False), ``outcomes``
    ("binomial": outcomes from the env's own stream; "common": question i's k-th rollout gets
    the same uniform draw whichever policy asks for it — common random numbers, so that two
    policies run on the same seed stay paired after their allocations differ:
    ``CommonOutcomes``), ``invalid_action`` ("raise"), ``render_mode`` (None or "ansi").

    >>> import gymnasium as gym, adaroll_env
    >>> env = gym.make("AdaRoll/BetaBernoulli-v0", num_questions=4, budget=16, pilot=1)
    >>> obs, info = env.reset(seed=0)
    >>> obs["budget_left"]
    array([12.], dtype=float32)

    ## Version History

    * v0: initial version.
    """

    _mode: model.Mode = "sequential"

    def __init__(self, *, invalid_action: InvalidAction = "raise", **kwargs: Any) -> None:
        check_keywords("AdaRoll/BetaBernoulli-v0", kwargs, ["invalid_action", *_arguments()])
        if "round_size" in kwargs and kwargs["round_size"] != 1:
            raise ValueError(
                f"round_size is {kwargs['round_size']}, but BetaBernoulli-v0 hands out one rollout "
                "per step: use AdaRoll/BetaBernoulliRounds-v0 for rounds"
            )
        if invalid_action not in ("raise", "redirect"):
            raise ValueError(
                f"invalid_action must be 'raise' or 'redirect', got {invalid_action!r}"
            )
        super().__init__(**kwargs)
        self.invalid_action: InvalidAction = invalid_action
        self.action_space = spaces.Discrete(self.params.num_questions)

    def step(
        self, action: Any
    ) -> tuple[dict[str, NDArray[np.float32]], SupportsFloat, bool, bool, dict[str, Any]]:
        """Give one rollout to question ``action``."""
        self._check_running()
        q = self._question(action)
        p = self.episode_params
        if self._state.rollouts[q] >= p.cap:
            if self.invalid_action == "raise":
                raise ValueError(
                    f"question {q} is at max_group ({p.cap} rollouts) and cannot take another: "
                    "choose among action_masks(), or make the env with invalid_action='redirect'"
                )
            var = np.where(
                model.feasible(p, self._state), model.posterior_variance(p, self._state), -1.0
            )
            q = int(np.argmax(var))
            self._redirected += 1
        # Uniforms for the episode's rollouts are drawn once in reset (same stream, cheaper).
        if self._common_draws:
            outcome = self._common.outcome(q, int(self._state.rollouts[q]))
        else:
            outcome = self._uniforms[self._state.spent] < self._true_p_list[q]
        self._state = model.apply(p, self._state, q, outcome)
        self._last_action = q
        return self._finish_step(q)

    def _last_round(self) -> NDArray[np.int64]:
        counts = np.zeros(self.params.num_questions, dtype=np.int64)
        if self._last_action is None:
            return self._state.rollouts.copy()
        counts[self._last_action] = 1
        return counts

    def _question(self, action: Any) -> int:
        B = self.params.num_questions
        if (
            isinstance(action, (int, np.integer))
            and not isinstance(action, bool)
            and 0 <= action < B
        ):
            return int(action)
        arr = np.asarray(action)
        if arr.size != 1 or (
            arr.dtype.kind not in "iu"
            and not (
                arr.dtype.kind == "f"
                and np.all(np.isfinite(arr))
                and float(arr.reshape(-1)[0]).is_integer()
            )
        ):
            raise ValueError(
                f"action {action!r} is not in the action space Discrete({B}): "
                f"give one integer question index in 0..{B - 1}"
            )
        q = int(arr.reshape(-1)[0])
        if not 0 <= q < B:
            raise ValueError(
                f"action {q} is outside the action space Discrete({B}): "
                f"give a question index in 0..{B - 1}"
            )
        return q


class BetaBernoulliRoundsEnv(_SimulatedAllocationEnv):
    """Rollout allocation in rounds with Beta beliefs: each step hands out R rollouts.

    ## Description

    As ``AdaRoll/BetaBernoulli-v0`` (one episode = one GRPO step; hidden pass rates, Beta
    beliefs, a budget of N rollouts, training utility as return), except that each step hands
    out a whole round of ``round_size`` rollouts (default R = B; the last round is what is left),
    as a real trainer generates them, or with ``round_schedule`` unequal rounds (round k after
    the pilot hands out ``round_schedule[k]``, the last entry repeating, capped by the budget
    left). Outcomes of a round are Binomial(counts_i, p_i).

    ## Action Space

    ``Box(-1, 1, (B,), float32)``: weights ``w = (a + 1) / 2``. The round is split in proportion
    to ``w`` by largest remainder (ties to the lower index); caps are respected and what a capped
    question cannot take goes to the next-largest weights; all-zero weights split evenly among
    questions under their cap. ``adaroll_env.encode_counts(counts)`` gives the action that
    decodes to exactly ``counts``. Values outside [-1, 1] or NaN raise ``ValueError``.

    ## Observation Space

    The same flat ``Dict`` as ``AdaRoll/BetaBernoulli-v0`` (alpha, beta, successes, rollouts,
    budget_left, mean, std; plus true_p with ``reveal_truth=True``).

    ## Rewards

    The increase of training utility caused by the round; the first step also carries the
    pilot's utility (the return equals the final utility). ``reward_mode="terminal"`` pays
    everything on the last step.

    ## Starting State

    As ``AdaRoll/BetaBernoulli-v0``: pass rates drawn from ``difficulty``, then the pilot.

    ## Episode End

    Terminated when the budget is spent (after ⌈(N − pilot·B) / R⌉ steps, or the schedule's
    rounds). Never truncated.

    ## Arguments

    Those of ``AdaRoll/BetaBernoulli-v0`` except ``invalid_action`` (decoding never breaks a
    cap), plus ``round_size`` (default B) and ``round_schedule``: a spec such as ``"384,128"``
    (rollout counts summing to N − pilot·B) or ``"0.75,0.25"`` (fractions summing to 1), read by
    ``adaroll_env.parse_round_schedule``, or a tuple of round sizes (the last repeating, as
    ``AllocationParams.round_schedule``); it excludes ``round_size``.

    >>> import gymnasium as gym, adaroll_env
    >>> env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=4, budget=16)
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(adaroll_env.encode_counts([4, 0, 0, 0]))
    >>> info["allocation"].tolist()
    [4, 0, 0, 0]

    >>> env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=4, budget=16,
    ...                round_schedule="12,4")
    >>> obs, info = env.reset(seed=0)
    >>> env.unwrapped.params.round_schedule
    (12, 4)

    ## Version History

    * v0: initial version.
    """

    _mode: model.Mode = "rounds"

    def __init__(self, *, round_size: int | None = None, **kwargs: Any) -> None:
        check_keywords("AdaRoll/BetaBernoulliRounds-v0", kwargs, _arguments())
        B = kwargs.get("num_questions", 16)
        if round_size is None:  # R = B, or the schedule's first round
            round_size = 1 if kwargs.get("round_schedule") else B
        super().__init__(round_size=round_size, **kwargs)
        self.action_space = spaces.Box(-1.0, 1.0, (self.params.num_questions,), dtype=np.float32)

    def step(
        self, action: Any
    ) -> tuple[dict[str, NDArray[np.float32]], SupportsFloat, bool, bool, dict[str, Any]]:
        """Hand out one round split by the weights in ``action``."""
        self._check_running()
        p = self.episode_params
        counts = model.decode_action(p, self._state, action)
        asked = encoded_counts(action)
        if asked is not None and list(asked) != counts.tolist():
            R = int(counts.sum())
            why = (
                f"hands out {sum(asked)} rollouts, but this round hands out {R} "
                "(min(round_size, budget left))"
                if sum(asked) != R
                else f"breaks a cap (room {model.capacity(p, self._state).tolist()})"
            )
            raise ValueError(
                f"encode_counts({list(asked)}) {why}; the env would hand out {counts.tolist()} "
                f"instead: give counts that sum to {R} within the caps, or pass the weights as "
                "a plain array (np.asarray) to have them split"
            )
        successes = self._successes(self._state.rollouts, counts)
        # decode_action's counts fit the round and the caps, and successes <= counts: no checks
        self._state = model.advance(self._state, counts, successes)
        self._last_counts = counts
        return self._finish_step()
