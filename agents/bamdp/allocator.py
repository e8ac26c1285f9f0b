"""The ``bamdp`` allocator: the exact BAMDP policy where affordable, the index policy elsewhere."""

from __future__ import annotations

import functools
import mmap
import os
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy.special import gammaln

from adaroll_env.model import AllocationParams, prior_arrays, prior_matches
from adaroll_env.utilities import log_binomial
from agents.bamdp.cache import get_table
from agents.bamdp.exact import ExactSolution, estimate_states, solve_exact
from agents.bamdp.index import GRID_SIZE, MAX_HORIZON, TableSpec
from agents.bamdp.rounds import (
    MAX_ROUNDS_HORIZON,
    RoundsPlan,
    decide_last_round,
    decide_round,
    plan_rounds,
    round_sizes,
)
from agents.bamdp.rounds import round_value_curves as plan_value_curves
from agents.base import BaseAllocator, Beliefs, Obs

PriorMode = Literal["tables", "interpolate"]
RoundPolicy = Literal["relaxed", "index"]
LastRound = Literal["exact", "index"]
RoundSplit = Literal["values", "even"]

#: up to this many distinct priors in one episode get a table each; more are interpolated
MAX_EXACT_PRIORS = 4
#: a kept rounds plan serves while each prior's share of the questions moved by at most this
#: (``scripts/bench_plan_reuse.py``: at 1/8 the batch's draw of prompts alone rebuilt a plan in a
#: third of the steps)
SHARE_TOLERANCE = 0.25
#: the table bank's first capacity (tables). The bank is one array, so that lookups are one
#: gather; a growth copies it (tens of megabytes, with the first touch of the new pages), which
#: per-prompt priors that drift with every refit of the group priors made frequent. Reserving
#: room for 1,024 tables up front costs address space only: the pages of rows never filled are
#: never touched, so memory holds the tables loaded (half a megabyte each), no more.
BANK_START = 1024


class _Tables:
    """Index tables for one set of per-question priors, stacked for vectorised lookups.

    Question i's index is Σ_c w[i, c]·λ*_{tid[i, c]}(s, f): one table with weight 1 (a table per
    distinct prior), or the four corners of its grid cell with bilinear weights (interpolation).
    """

    def __init__(
        self, stack: NDArray[np.float64], tid: NDArray[np.int64], w: NDArray[np.float64]
    ) -> None:
        self.stack = stack  # [T, H+1, H+1]: the allocator's table bank (see _bank_ids)
        self.horizon = stack.shape[1] - 1  # one cap and max_horizon per allocator: one horizon
        self.tid = tid  # [B, C]
        self.w = w  # [B, C]

    def lookup(
        self, s: NDArray[np.int64], f: NDArray[np.int64], q: NDArray[np.int64]
    ) -> NDArray[np.float64]:
        """λ*(s, f) of questions ``q`` (past the horizon: the same success fraction there)."""
        H = self.horizon
        n = s + f
        over = n > H
        if np.any(over):
            ss = np.where(over, np.rint(s * H / np.maximum(n, 1)).astype(np.int64), s)
            f = np.where(over, H - ss, f)
            s = ss
        tid, w = self.tid[q], self.w[q]  # [..., C]
        if tid.shape[-1] == 1:
            return self.stack[tid[..., 0], s, f]
        vals = self.stack[tid, s[..., None], f[..., None]]  # [..., C]
        return np.asarray(np.sum(np.where(w > 0, w * vals, 0.0), axis=-1), dtype=np.float64)


def even_within_classes(
    counts: NDArray[np.int64],
    spec_of: NDArray[np.int64],
    s: NDArray[np.int64],
    f: NDArray[np.int64],
) -> NDArray[np.int64]:
    """``counts`` with each class of identical questions (the same prior ``spec_of``, the same
    successes ``s`` and failures ``f``, hence the same capacity) sharing its total evenly: the
    class's k questions get ⌊T/k⌋ each and the first T mod k of them one more. Class totals, and
    so the round's size, are kept.

    >>> even_within_classes(np.array([7, 0, 7, 0, 2]), np.zeros(5, dtype=np.int64),
    ...                     np.array([0, 0, 0, 0, 1]), np.zeros(5, dtype=np.int64)).tolist()
    [4, 4, 3, 3, 2]
    """
    keys = np.stack([spec_of, s, f], axis=1)
    _, label = np.unique(keys, axis=0, return_inverse=True)
    label = label.ravel()
    size = np.bincount(label)
    total = np.bincount(label, weights=counts).astype(np.int64)
    order = np.argsort(label, kind="stable")  # members of a class in question order
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size) - np.repeat(np.cumsum(size) - size, size)
    return np.asarray(
        total[label] // size[label] + (rank < total[label] % size[label]), dtype=np.int64
    )


class BAMDPAllocator(BaseAllocator):
    """Bayes-optimal rollout allocation for the BAMDP of docs: design §2 (adaroll's own method).

    Sources: the Bayes-adaptive MDP of Duff (2002), solved exactly by Bellman's (1957) backward
    induction; the index policy is the Lagrangian relaxation of the budget constraint (Whittle,
    1988), each question's index an optimal-stopping price in the manner of Gittins (1979).

    **Index policy.** Relax the budget with a price λ per rollout: each question becomes an
    optimal-stopping problem over its own counts, and continuing beats stopping exactly for
    λ < λ*(s, f), the question's *index* (``agents.bamdp.index``; precomputed tables per prior,
    utility and cap, cached on disk). Each rollout goes to the open question with the highest
    index (ties to the lower index). In a round of R rollouts the outcomes of the round are not
    seen until it ends, so the m-th extra rollout of question i in the round is ranked by the
    predictive expectation of the index at the count it lands on,
    e_i(m) = Σ_k BetaBin(k; m, α_i, β_i)·λ*(s_i + k, f_i + m − k), made non-increasing in m; the
    round takes the R largest e_i(m).

    **Rounds.** With ``round_policy="relaxed"`` (default) a round is decided by the
    rounds-aware relaxation (``agents.bamdp.rounds``: one price per round) where the episode
    has at most ``MAX_EXACT_PRIORS`` distinct priors. With more (training: per-prompt priors from
    the belief store) its plan would need a table per prior, so the index rule above decides the
    rounds before the last; the **last round** (the whole budget left) is then split exactly —
    Σ_i E_m[u] maximised given the state, under each question's own posterior
    (``decide_last_round``; ``last_round="index"`` keeps the index rule there too).
    The relaxation values each question's counts alone, a later round's rollouts bought at that
    round's price; its values are not concave in the count, so identical questions can be split
    between extremes (two rounds of 256 at B = 64 under ``snr(4)``: 6-7 rollouts to 37 questions,
    none to 27) that tie at the price but cost utility once the later round's budget binds.
    ``round_split="even"`` gives each class of identical questions (same prior and counts) its
    total evenly in every round before the last (``even_within_classes``); ``"values"`` (the
    default) keeps the split as it comes.

    A trainer refits its grouped priors every step; the plan made for one step keeps deciding
    while every distinct prior stays within ``plan_tolerance`` (default 0.1, relative) of the
    ones it was made for and their shares of the questions within ``SHARE_TOLERANCE``
    (``_kept_plan``; ``plan_tolerance=None`` plans every new set of priors). The kept problem is
    the allocator's ``state_dict``, which the trainers checkpoint, so a resumed run decides as an
    uninterrupted one.

    **Exact policy.** Where the joint belief state space is small enough (``max_states`` states
    in sequential mode, ``max_round_states`` in rounds mode, whose states carry many more
    decisions), the allocator solves the BAMDP exactly by backward induction at ``reset``
    (``agents.bamdp.exact``; again for per-episode priors, cached) and plays the optimal action:
    provably Bayes-optimal there. ``exact=False`` always plays the index policy.

    **Rounds schedules.** Both policies follow ``params.round_schedule`` (unequal rounds): each
    decision hands out ``beliefs.round_size``, the schedule's next round; the exact solver's
    levels are the schedule's boundaries (``adaroll_env.model.round_size_at``), so where the
    instance is small enough the exact policy is Bayes-optimal for the schedule too.

    **Priors from history.** Per-question priors come from the observation (alpha − successes);
    when they are the params' priors the params' own tables serve. Otherwise
    ``prior_mode="interpolate"`` (default) interpolates indices bilinearly in (log α, log β)
    between tables on a log grid (``grid_per_decade`` points a decade, built once and cached),
    and ``"tables"`` builds one table per distinct prior (rounded to ``prior_digits`` significant
    digits). ``scripts/bench_bamdp.py`` measured both on priors from a belief store: the same
    utility within the CI and 94 % of rollouts placed alike, with interpolation three times
    faster on cold caches (and no new tables once its grid is built); hence the default.

    **Pilot in training** (``default_pilot = 2``). A trainer whose ``pilot`` is unset gives every
    prompt 2 rollouts before this allocator's first decision. Without them a prompt it never
    samples keeps its group's prior mean, and for a hard group (the longest words of
    ``rg:spell_backward``) a myopic allocator then never looks: in TRL it gave a rollout to a
    quarter of that group's training prompts. The pilot was adopted by a rule written before its
    runs (``results/attributed/belief_fit``, validation splits). Simulator envs keep their own
    explicit ``pilot`` (0 unless given).
    """

    name = "bamdp"
    default_pilot = 2

    def __init__(
        self,
        *,
        max_states: int = 1_000_000,
        max_round_states: int = 20_000,
        exact: bool = True,
        max_horizon: int = MAX_HORIZON,
        grid_size: int = GRID_SIZE,
        prior_mode: PriorMode = "interpolate",
        prior_digits: int = 4,
        grid_per_decade: int = 8,
        cache_dir: str | os.PathLike | None = None,
        round_policy: RoundPolicy = "relaxed",
        rounds_horizon: int = MAX_ROUNDS_HORIZON,
        last_round: LastRound = "exact",
        round_split: RoundSplit = "values",
        plan_tolerance: float | None = 0.1,
    ) -> None:
        super().__init__()
        if plan_tolerance is not None and not 0.0 <= float(plan_tolerance) < 1.0:
            raise ValueError(
                f"plan_tolerance must be None (a plan for every new set of priors) or a relative "
                f"change in [0, 1) within which a kept plan serves, got {plan_tolerance!r}"
            )
        self.plan_tolerance = None if plan_tolerance is None else float(plan_tolerance)
        #: the problem whose plan is kept across steps (``_kept_plan``); in ``state_dict``
        self._anchor: AllocationParams | None = None
        if round_split not in ("values", "even"):
            raise ValueError(
                f"round_split must be 'values' (the relaxation's split as it comes) or 'even' "
                f"(each class of identical questions shares its rollouts evenly), got "
                f"{round_split!r}"
            )
        self.round_split: RoundSplit = round_split
        if last_round not in ("exact", "index"):
            raise ValueError(
                f"last_round must be 'exact' (the exact last-round split for any priors) or "
                f"'index' (the index rule when the relaxation does not apply), got {last_round!r}"
            )
        self.last_round: LastRound = last_round
        if prior_mode not in ("tables", "interpolate"):
            raise ValueError(f"prior_mode must be 'tables' or 'interpolate', got {prior_mode!r}")
        if round_policy not in ("relaxed", "index"):
            raise ValueError(
                f"round_policy must be 'relaxed' (the rounds-aware relaxation) or 'index' (the "
                f"R largest expected indices), got {round_policy!r}"
            )
        self.round_policy: RoundPolicy = round_policy
        self.rounds_horizon = int(rounds_horizon)
        self._plans: dict[AllocationParams, RoundsPlan] = {}
        self.max_states = int(max_states)
        self.max_round_states = int(max_round_states)
        self.exact = bool(exact)
        self.max_horizon = int(max_horizon)
        self.grid_size = int(grid_size)
        self.prior_mode: PriorMode = prior_mode
        self.prior_digits = int(prior_digits)
        self.cache_dir = cache_dir
        self.grid_per_decade = int(grid_per_decade)
        self._tables: dict[tuple[tuple[float, ...], tuple[float, ...], bool], _Tables] = {}
        self._seq: dict[str, Any] | None = None
        self._rows: tuple[_Tables, int, NDArray[np.float64], NDArray[np.float64]] | None = None
        self._bank: dict[TableSpec, int] = {}
        self._bank_stack: NDArray[np.float64] = np.empty((0, 1, 1))
        self._solutions: dict[AllocationParams, ExactSolution] = {}  # a cache of solved BAMDPs
        self._use_exact = False

    def reset(self, params: AllocationParams, *, seed: int | None = None) -> None:
        """Take the params; the index tables of their priors are loaded (or built) when a
        decision first needs them: where the rounds-aware plan and the exact last round decide
        every round (a training step with a few grouped priors) none is, and building them for
        each step's refitted priors cost as much as the decisions (about 0.18 s a step at four
        priors, ``scripts/bench_plan_reuse.py``)."""
        super().reset(params, seed=seed)
        self._tables = {}
        self._seq = None
        self._rows = None
        a, b = prior_arrays(params)
        self._param_priors = (a, b)
        limit = self.exact_limit(params)
        self._use_exact = self.exact and estimate_states(params, limit=limit) <= limit
        if self._use_exact:
            self._solution(params)

    def exact_limit(self, params: AllocationParams) -> int:
        """The state count under which the exact policy is used (rounds cost more per state:
        a state has many more decisions)."""
        return self.max_states if params.unit_rounds else self.max_round_states

    def _solution(self, params: AllocationParams) -> ExactSolution:
        sol = self._solutions.get(params)
        if sol is None:
            sol = solve_exact(params, max_states=self.exact_limit(params))
            if len(self._solutions) > 16:
                self._solutions.clear()
            self._solutions[params] = sol
        return sol

    def _exact_action(self, b: Beliefs) -> NDArray[np.int64] | None:
        """The optimal action at the observation's state, or None off the solved grid."""
        p = self.params
        pa, pb = self._param_priors
        if not np.all(prior_matches(pa, pb, b.prior_alpha, b.prior_beta, b.successes, b.failures)):
            p = p.replace(
                prior_alpha=tuple(self._round_priors(b.prior_alpha).tolist()),
                prior_beta=tuple(self._round_priors(b.prior_beta).tolist()),
            )
        try:
            return self._solution(p).action(b.successes, b.failures)
        except ValueError:
            return None

    # --- tables ---------------------------------------------------------------------------
    def _spec(self, a: float, b: float) -> TableSpec:
        p = self.params
        return TableSpec.make(
            a, b, p.utility, p.cap, max_horizon=self.max_horizon, grid_size=self.grid_size
        )

    def _tables_for(
        self, a: NDArray[np.float64], b: NDArray[np.float64], *, interpolate: bool = False
    ) -> _Tables:
        key = (tuple(a.tolist()), tuple(b.tolist()), interpolate)
        found = self._tables.get(key)
        if found is None:
            if interpolate:
                corners, w = _grid_corners(a, b, self.grid_per_decade)  # [B, 4, 2], [B, 4]
                pairs = [tuple(c) for c in corners.reshape(-1, 2).tolist()]
            else:
                pairs = list(zip(a.tolist(), b.tolist(), strict=True))
                w = np.ones((a.size, 1))
            uniq = sorted(set(pairs))
            bank = self._bank_ids([self._spec(x, y) for x, y in uniq])
            where = {pr: bank[k] for k, pr in enumerate(uniq)}
            tid = np.array([where[pr] for pr in pairs], dtype=np.int64).reshape(w.shape)
            found = _Tables(self._bank_stack, tid, w)
            if len(self._tables) > 64:
                self._tables.clear()
            self._tables[key] = found
        return found

    def _bank_ids(self, specs: list[TableSpec]) -> list[int]:
        """Each spec's row in the allocator's bank of loaded tables, loading the new ones.

        The bank outlives ``reset``: per-prompt priors change every episode, the grid corners
        they interpolate between do not, so a new episode stacks no tables it already holds.
        """
        new = [sp for sp in dict.fromkeys(specs) if sp not in self._bank]
        if new:
            tables = [get_table(sp, directory=self.cache_dir).index for sp in new]
            if self._bank and tables[0].shape != self._bank_stack.shape[1:]:
                self._bank, self._bank_stack = {}, np.empty((0, *tables[0].shape))
                new = list(dict.fromkeys(specs))
                tables = [get_table(sp, directory=self.cache_dir).index for sp in new]
            n = len(self._bank)
            need = n + len(new)
            if need > self._bank_stack.shape[0]:  # grow by doubling: amortised O(1) a table
                size = max(need, 2 * self._bank_stack.shape[0], BANK_START)
                grown = _lazy_array((size, *tables[0].shape))
                grown[:n] = self._bank_stack[:n]
                self._bank_stack = grown
            for k, (sp, table) in enumerate(zip(new, tables, strict=True)):
                self._bank_stack[n + k] = table
                self._bank[sp] = n + k
        return [self._bank[sp] for sp in specs]

    def _param_tables(self) -> _Tables:
        """The tables of the params' priors: one per prior when there are few distinct ones,
        else (``prior_mode="interpolate"``) the interpolation grid's, so that a batch of
        per-prompt priors from a belief store costs no new tables once the grid is built."""
        pa, pb = self._param_priors
        distinct = len(set(zip(pa.tolist(), pb.tolist(), strict=True)))
        if self.prior_mode == "interpolate" and distinct > MAX_EXACT_PRIORS:
            return self._tables_for(
                self._round_priors(pa), self._round_priors(pb), interpolate=True
            )
        return self._tables_for(pa, pb)

    def _round_priors(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        digits = self.prior_digits - 1 - np.floor(np.log10(np.abs(x)))
        scale = 10.0**digits
        return np.asarray(np.round(x * scale) / scale, dtype=np.float64)

    def tables_for_obs(self, b: Beliefs) -> _Tables:
        """The tables of the observation's priors: the params' own when they match, else one
        per distinct (rounded) prior or the interpolation grid's, by ``prior_mode``."""
        pa, pb = self._param_priors
        oa, ob = b.prior_alpha, b.prior_beta
        if np.all(prior_matches(pa, pb, oa, ob, b.successes, b.failures)):
            return self._param_tables()
        ra, rb = self._round_priors(oa), self._round_priors(ob)
        return self._tables_for(ra, rb, interpolate=self.prior_mode == "interpolate")

    # --- decisions ------------------------------------------------------------------------
    def indices(self, obs: Obs) -> NDArray[np.float64]:
        """λ*(s_i, f_i) of every question (−inf for questions at their cap)."""
        b = self.beliefs(obs)
        t = self.tables_for_obs(b)
        idx = t.lookup(b.successes, b.failures, np.arange(b.rollouts.size))
        return np.where(b.capacity > 0, idx, -np.inf)

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """The exact optimal action where solved, else the next rollouts to the highest indices."""
        if self._use_exact:
            action = self._exact_action(self.beliefs(obs))
            if action is not None:
                return action
        if self.params.unit_rounds:
            counts = np.zeros(self.params.num_questions, dtype=np.int64)
            counts[self._next_question(obs)] = 1
            return counts
        b = self.beliefs(obs)
        if self.round_policy == "relaxed" and b.round_size > 1:
            relaxed = self._relaxed_round(b)
            if relaxed is not None:
                return relaxed
            if self.last_round == "exact" and b.round_size >= b.budget_left:
                return self._last_round(b)
        t = self.tables_for_obs(b)
        B = b.rollouts.size
        counts = np.zeros(B, dtype=np.int64)
        if b.round_size == 1:
            idx = t.lookup(b.successes, b.failures, t.tid)
            idx = np.where(b.capacity > 0, idx, -np.inf)
            counts[int(np.argmax(idx))] = 1
            return counts
        return self._round(b, t)

    # --- the rounds-aware policy ----------------------------------------------------------
    def plan(self, params: AllocationParams) -> RoundsPlan:
        """The rounds plan of ``params`` (prices and continuation tables), built once."""
        found = self._plans.get(params)
        if found is None:
            found = plan_rounds(params, max_horizon=self.rounds_horizon)
            if len(self._plans) > 16:
                self._plans.clear()
            self._plans[params] = found
        return found

    def _relaxed_round(self, b: Beliefs) -> NDArray[np.int64] | None:
        """The round's counts by the rounds-aware relaxation, or None where it does not apply
        (more than ``MAX_EXACT_PRIORS`` distinct priors: the index rule decides)."""
        found = self._relaxed_problem(b)
        if found is None:
            return None
        plan, spec_of, t = found
        counts = decide_round(plan, spec_of, t, b.successes, b.failures, b.capacity, b.round_size)
        if self.round_split == "even" and b.round_size < b.budget_left:
            counts = even_within_classes(counts, spec_of, b.successes, b.failures)
        return counts

    def round_value_curves(self, obs: Obs) -> NDArray[np.float64] | None:
        """Each question's value curve for the next round ``[B, M + 1]``: the expected
        continuation, under the rounds plan, of giving it m = 0..M of the round's rollouts (−inf
        past what it may take); the relaxed round's counts maximise their sum under Σ = R. None
        where the relaxation does not decide the round (rollouts one at a time, the index round
        policy, more than ``MAX_EXACT_PRIORS`` distinct priors). What a learned allocator can be
        fitted to: the value its round gives up (``agents.sb3.imitation``). Call it in the state
        of an ``allocate`` (after ``reset``), before or after it."""
        b = self.beliefs(obs)
        if self.params.unit_rounds or self.round_policy != "relaxed" or b.round_size <= 1:
            return None
        found = self._relaxed_problem(b)
        if found is None:
            return None
        plan, spec_of, t = found
        values, rows = plan_value_curves(
            plan, spec_of, t, b.successes, b.failures, b.capacity, b.round_size
        )
        return values[rows]

    def _relaxed_problem(self, b: Beliefs) -> tuple[RoundsPlan, NDArray[np.int64], int] | None:
        """``(plan, each question's prior in it, round index)`` of the relaxed round, or None
        where it does not apply."""
        p = self.params
        pa, pb = self._param_priors
        if not np.all(prior_matches(pa, pb, b.prior_alpha, b.prior_beta, b.successes, b.failures)):
            ra, rb = self._round_priors(b.prior_alpha), self._round_priors(b.prior_beta)
            p = p.replace(prior_alpha=tuple(ra.tolist()), prior_beta=tuple(rb.tolist()))
            pa, pb = ra, rb
        pairs = list(zip(pa.tolist(), pb.tolist(), strict=True))
        distinct = sorted(set(pairs))
        if len(distinct) > MAX_EXACT_PRIORS:
            return None
        episode = p
        if self.plan_tolerance is not None and len(distinct) > 1:
            p, pairs = self._kept_plan(p, pairs)
        plan = self.plan(p)
        spent = int(b.rollouts.sum())
        t = len(plan.rounds) - len(round_sizes(episode, spent))
        if not 0 <= t < len(plan.rounds) or plan.rounds[t] != b.round_size:
            return None  # not on the schedule this plan was made for
        where = {(sp.alpha, sp.beta): g for g, sp in enumerate(plan.specs)}
        return plan, np.array([where[pr] for pr in pairs], dtype=np.int64), t

    def _kept_plan(
        self, p: AllocationParams, pairs: list[tuple[float, float]]
    ) -> tuple[AllocationParams, list[tuple[float, float]]]:
        """The problem whose plan decides this round, and each question's prior in it: the kept
        one (``_anchor``) while this episode matches it, else this episode's, which is kept.

        A trainer refits its grouped priors every step, so planned exactly nearly every step
        would build a plan (about 0.2 s at B = 64, two rounds and four priors on a CPU; 7.7 % of
        a ``rg:letter_counting`` step). The plan's prices move little with small changes of the
        priors and of how many questions hold each, and the round's own counts are repaired to
        the round exactly, so a plan serves while every distinct prior stays within
        ``plan_tolerance`` (relative, in α and in β) of the kept one's, matched in sorted
        order, each prior's share of the questions within ``SHARE_TOLERANCE`` (1/4) of its
        share there, and the rest of the setting (budget, schedule, pilot, cap, utility) is
        the same. The kept problem is part of ``state_dict``, so a resumed run decides as an
        uninterrupted one."""
        kept = self._anchor
        if kept is not None:
            mapping = _match_priors(kept, p, pairs, self.plan_tolerance or 0.0)
            if mapping is not None:
                return kept, [mapping[pr] for pr in pairs]
        self._anchor = p
        return p, pairs

    def state_dict(self) -> dict[str, Any]:
        """What a resumed run needs to decide as an uninterrupted one: the kept plan's problem
        (the plan itself is rebuilt from it, deterministically)."""
        return {"plan_anchor": None if self._anchor is None else self._anchor.to_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""
        anchor = state.get("plan_anchor")
        if anchor is None:
            self._anchor = None
            return
        d = dict(anchor)
        for key in ("prior_alpha", "prior_beta", "round_schedule"):
            if isinstance(d.get(key), list):
                d[key] = tuple(d[key])
        self._anchor = AllocationParams(**d)

    def _last_round(self, b: Beliefs) -> NDArray[np.int64]:
        """The exactly optimal last round for the observation's own priors (``decide_last_round``:
        no plan, so any number of distinct priors)."""
        p = self.params
        return decide_last_round(
            b.prior_alpha, b.prior_beta, b.successes, b.failures, b.capacity, b.round_size,
            utility=p.utility, cap=p.cap, max_horizon=self.rounds_horizon,
        )  # fmt: skip

    def act(self, obs: Obs) -> int | NDArray[np.float32]:
        """As ``BaseAllocator.act``, without building counts in sequential mode."""
        if self.params.unit_rounds and not self._use_exact:
            return self._next_question(obs)
        return super().act(obs)

    def _next_question(self, obs: Obs) -> int:
        """Sequential decisions: argmax of the indices, updated only where the observation moved.

        The cached indices are a function of the observation alone (recomputed wherever alpha or
        beta differ from the cached ones, and from scratch when many do or a prior changed), so
        the cache never changes a decision.
        """
        a32, b32 = obs["alpha"], obs["beta"]
        c = self._seq
        if c is not None and a32.shape == c["alpha"].shape:
            moved = np.flatnonzero((a32 != c["alpha"]) | (b32 != c["beta"]))
            if moved.size == 1:  # the usual case: last step's question, in scalar arithmetic
                i = int(moved[0])
                s_i = round(float(obs["successes"][i]))
                n_i = round(float(obs["rollouts"][i]))
                pa_i = float(a32[i]) - s_i
                pb_i = float(b32[i]) - (n_i - s_i)
                ca, cb = c["prior_a"][i], c["prior_b"][i]
                if prior_matches(ca, cb, pa_i, pb_i, s_i, n_i - s_i):
                    tables: _Tables = c["tables"]
                    idx = c["idx"]
                    if n_i >= self.params.cap:
                        idx[i] = -np.inf
                    else:
                        q = np.array([i])
                        idx[i] = tables.lookup(np.array([s_i]), np.array([n_i - s_i]), q)[0]
                    c["alpha"][i], c["beta"][i] = a32[i], b32[i]
                    return int(np.argmax(idx))
            elif moved.size == 0:
                return int(np.argmax(c["idx"]))
        b = self.beliefs(obs)
        t = self.tables_for_obs(b)
        q = np.arange(b.rollouts.size)
        idx = np.where(b.capacity > 0, t.lookup(b.successes, b.failures, q), -np.inf)
        self._seq = {
            "alpha": a32.copy(),
            "beta": b32.copy(),
            "prior_a": b.prior_alpha,
            "prior_b": b.prior_beta,
            "tables": t,
            "idx": idx,
        }
        return int(np.argmax(idx))

    def _round(self, b: Beliefs, t: _Tables) -> NDArray[np.int64]:
        R = b.round_size
        B = b.rollouts.size
        M = int(min(R, b.capacity.max(), max(4, -(-4 * R // B))))
        E = self._expected_indices(b, t, M)  # [B, M]
        while True:
            flat = E.ravel()
            q = np.repeat(np.arange(B), M)
            order = np.lexsort((q, -flat))[:R]  # largest first, ties to the lower index
            counts = np.bincount(q[order], minlength=B).astype(np.int64)
            full = (counts >= M) & (b.capacity > M)
            if not full.any() or min(R, int(b.capacity.max())) <= M:
                return counts
            # Only the questions that took all M slots need longer rows: another question's
            # later entries are no larger than its first unchosen one (rows do not increase),
            # and longer rows elsewhere only raise the bar, so they stay unchosen.
            wider = min(2 * M, R, int(b.capacity.max()))
            grown = np.full((B, wider), -np.inf)
            grown[:, :M] = E
            rows = np.flatnonzero(full)
            grown[rows] = _expected_rows(b, t, wider, rows)
            E, M = grown, wider

    def _expected_indices(self, b: Beliefs, t: _Tables, M: int) -> NDArray[np.float64]:
        """e_i(m) for m = 0..M−1, made non-increasing in m; −inf past a question's capacity.

        Rows are memoised between the decisions of one episode: a question whose belief, counts
        and capacity did not change since the last call (with the same tables and M) keeps its
        row, so a round recomputes only the questions the previous round touched.
        """
        key = np.stack(
            [b.alpha, b.beta, b.successes.astype(np.float64), b.failures.astype(np.float64),
             b.capacity.astype(np.float64)], axis=1,
        )  # fmt: skip
        memo = self._rows
        if memo is not None and memo[0] is t and memo[2].shape == key.shape:
            width = max(M, memo[1])  # a longer row's prefix is the shorter row
            rows = np.flatnonzero(np.any(memo[2] != key, axis=1))
            E = memo[3]
            if width > memo[1]:
                E = np.empty((key.shape[0], width), dtype=np.float64)
                rows = np.arange(key.shape[0])
            else:
                E = E.copy()
        else:
            width = M
            rows = np.arange(b.rollouts.size)
            E = np.empty((b.rollouts.size, M), dtype=np.float64)
        if rows.size:
            E[rows] = _expected_rows(b, t, width, rows)
        self._rows = (t, width, key, E)
        return E[:, :M]


def _match_priors(
    kept: AllocationParams,
    p: AllocationParams,
    pairs: list[tuple[float, float]],
    tolerance: float,
) -> dict[tuple[float, float], tuple[float, float]] | None:
    """Each of ``p``'s distinct priors (``pairs``, one per question) mapped to ``kept``'s prior
    in the same sorted place, or None where ``kept``'s plan does not serve ``p``
    (``BAMDPAllocator._kept_plan``: another setting, another number of distinct priors, a prior
    moved by more than ``tolerance`` relative in α or β, or a share of the questions by more than
    ``SHARE_TOLERANCE``)."""
    ka, kb = prior_arrays(kept)
    if kept.replace(prior_alpha=p.prior_alpha, prior_beta=p.prior_beta) != p:
        return None
    old = list(zip(ka.tolist(), kb.tolist(), strict=True))
    mine, theirs = sorted(set(pairs)), sorted(set(old))
    if len(mine) != len(theirs):
        return None
    B = len(pairs)
    for (a, b), (a0, b0) in zip(mine, theirs, strict=True):
        if abs(a / a0 - 1.0) > tolerance or abs(b / b0 - 1.0) > tolerance:
            return None
        if abs(pairs.count((a, b)) - old.count((a0, b0))) > B * SHARE_TOLERANCE:
            return None
    return dict(zip(mine, theirs, strict=True))


@functools.lru_cache(maxsize=32)
def _pairs(
    M: int,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """The pairs k <= m < M (m, k, ln C(m, k)) and the first pair of each m."""
    mi, ki = np.tril_indices(M)
    starts = (np.arange(M) * (np.arange(M) + 1)) // 2
    for x in (mi, ki, starts):
        x.flags.writeable = False
    logc = log_binomial(mi, ki)
    logc.flags.writeable = False
    return mi, ki, logc, starts


def _expected_rows(b: Beliefs, t: _Tables, M: int, rows: NDArray[np.int64]) -> NDArray[np.float64]:
    """e_i(m) = Σ_{k<=m} BetaBin(k; m, α_i, β_i)·λ*(s_i + k, f_i + m − k) for the questions
    ``rows`` and m = 0..M−1, made non-increasing in m, −inf past capacity: [len(rows), M].

    Only the pairs k <= m are evaluated, and the Beta-binomial log-weights are assembled from
    per-question log-gamma rows (3·M values a question, not M² Beta functions).
    """
    mi, ki, logc, starts = _pairs(M)  # [P] pairs (m, k), m ascending, k ascending within m
    a = b.alpha[rows][:, None]  # [Q, 1]
    be = b.beta[rows][:, None]  # [Q, 1]
    j = np.arange(M, dtype=np.float64)[None, :]  # [1, M]
    ga, gb, gab = gammaln(a + j), gammaln(be + j), gammaln(a + be + j)  # [Q, M] each
    norm = ga[:, :1] + gb[:, :1] - gammaln(a + be)  # ln B(α, β): [Q, 1]
    logw = logc[None, :] + ga[:, ki] + gb[:, mi - ki] - gab[:, mi] - norm  # [Q, P]
    s = b.successes[rows][:, None] + ki[None, :]  # [Q, P]
    f = b.failures[rows][:, None] + (mi - ki)[None, :]  # [Q, P]
    cap = b.capacity[rows][:, None]  # [Q, 1]
    idx = t.lookup(s, f, np.broadcast_to(rows[:, None], s.shape))  # [Q, P]
    contrib = np.where(mi[None, :] < cap, np.exp(logw) * idx, 0.0)  # [Q, P]
    E = np.add.reduceat(contrib, starts, axis=1)  # [Q, M]
    E = np.where(np.arange(M)[None, :] < cap, E, -np.inf)
    return np.minimum.accumulate(E, axis=1)


def _lazy_array(shape: tuple[int, ...]) -> NDArray[np.float64]:
    """A float64 array in an anonymous memory map: its pages are zero and cost memory only once
    written, and, unlike a large ``np.empty`` (which numpy asks the kernel to back with huge
    pages), the first write of a row faults in small pages: on a busy machine filling one
    half-megabyte table took about 7 ms with huge pages and under 1 ms without."""
    size = int(np.prod(shape)) * 8
    buf = mmap.mmap(-1, max(size, 1))
    return np.frombuffer(buf, dtype=np.float64, count=int(np.prod(shape))).reshape(shape)


def _grid_corners(
    a: NDArray[np.float64], b: NDArray[np.float64], per_decade: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The four grid priors around each (a, b) on a log grid, and bilinear weights in log space."""
    la, lb = np.log10(a) * per_decade, np.log10(b) * per_decade
    a0, b0 = np.floor(la), np.floor(lb)
    wa, wb = la - a0, lb - b0  # in [0, 1)
    A = 10.0 ** (np.stack([a0, a0, a0 + 1, a0 + 1], axis=1) / per_decade)  # [B, 4]
    Bv = 10.0 ** (np.stack([b0, b0 + 1, b0, b0 + 1], axis=1) / per_decade)  # [B, 4]
    w = np.stack([(1 - wa) * (1 - wb), (1 - wa) * wb, wa * (1 - wb), wa * wb], axis=1)
    # Grid values rounded so equal corners of neighbouring questions share one table.
    A = np.round(A, 12)
    Bv = np.round(Bv, 12)
    return np.stack([A, Bv], axis=-1), w
