"""Exact Bayes-optimal allocation: backward induction over the folded joint belief state.

The BAMDP of docs: design §2: question i holds the belief Beta(a_i + s_i, b_i + f_i); a decision
hands out one rollout (``mode="sequential"``) or a round of r = min(R, budget left) rollouts split
as any integer counts vector under the caps (``mode="rounds"``; with a ``round_schedule``, r is the
schedule's next round, ``adaroll_env.model.round_size_at``: the solver supports unequal rounds, its
levels being the schedule's boundaries); outcomes follow the posterior predictive (a round's outcome
is the product over questions of Beta-binomial(c_i, a_i + s_i, b_i + f_i)); the value is E[Σ_i
u(s_i, f_i)] at the end, pilot outcomes included. Bellman (1957) backward induction on the belief
state, as in Duff's BAMDP formulation (2002):

    V(x) = Σ_i u(s_i, f_i)                          when the budget is spent,
    V(x) = max_c Σ_o P(o | x, c) · V(x ⊕ (c, o))    otherwise.

**Folding.** Questions that share a prior (a_i, b_i) — exact float equality — are exchangeable,
so the solver's state is, per prior group, the *multiset* of (s, f) pairs. A folded state is a
flat tuple of pair codes: the groups in the order of their first question, each group's codes
sorted ascending (a code orders pairs lexicographically by (s, f)). Decisions are folded too: in
sequential mode a decision is one class (a distinct (s, f) of a group); in rounds mode a decision
gives each class a multiset of counts, and the outcomes of questions of one class that received
the same count are enumerated as multisets with multinomial weights.

**Levels.** Every state with pilot ≤ n_i ≤ cap whose rollouts add up to a decision level is
reachable (all outcomes have positive probability), so the solver works level by level over
Σ n — sequential: pilot·B, …, N; rounds: pilot·B, pilot·B + r_0, …, N — from the terminal level
down, without recursion. ``estimate_states`` (``agents.bamdp.states``, re-exported here)
counts exactly those states with a generating function, without solving.

**Ties.** Actions whose values lie within ``TIE_TOL`` (relative to max(1, |best|)) of the best
are tied; ``ExactSolution.action`` maps each tied folded decision to question indices (inside a
class the lowest indices get the largest counts) and returns the **lexicographically largest
counts vector** — in sequential mode, the lowest question index. The rule depends on the
unfolded state, so the policy stores every tied folded decision and resolves at lookup.

Only small instances are affordable (docs: design §4: B = 4, N = 12 has 7036 states, B = 8, N = 32
1.4·10⁸): ``solve_exact`` refuses past ``max_states``. Its value certifies the scalable policies.

One module of about 500 lines on purpose: the folded layout, the solver and the solution share
one private encoding of states and decisions; state counting lives in ``agents.bamdp.states``.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from adaroll_env.model import (
    AllocationParams,
    pilot_counts,
    posterior_mean,
    prior_arrays,
    round_size_at,
)
from adaroll_env.utilities import beta_binomial_logpmf, get_utility
from agents.bamdp.states import decision_levels, estimate_states, prior_groups

#: Default limit on the folded states ``solve_exact`` will visit.
DEFAULT_MAX_STATES = 1_000_000
#: Actions within TIE_TOL·max(1, |best value|) of the best are treated as tied.
TIE_TOL = 1e-11

Key = tuple[int, ...]
Counts = tuple[int, ...]


# ---------------------------------------------------------------------------------------------
# Layout: groups, pair codes, per-code tables
# ---------------------------------------------------------------------------------------------


class _Layout:
    """Codes of (s, f) pairs and the per-code tables the solver reads."""

    def __init__(self, params: AllocationParams) -> None:
        self.params = params
        self.B = params.num_questions
        self.N = params.total_budget
        self.cap = params.cap
        self.groups = prior_groups(params)
        #: each group's pilot (a function of its prior: ``pilot_counts``)
        self.pilots = [int(pilot_counts(params)[g[0]]) for g in self.groups]
        self.bounds: list[tuple[int, int]] = []
        start = 0
        for g in self.groups:
            self.bounds.append((start, start + len(g)))
            start += len(g)
        cap = self.cap
        # code(s, f), s + f <= cap, increasing in (s, f) lexicographically.
        self.code: list[list[int]] = []
        S: list[int] = []
        F: list[int] = []
        for s in range(cap + 1):
            row = []
            for f in range(cap + 1 - s):
                row.append(len(S))
                S.append(s)
                F.append(f)
            self.code.append(row)
        self.S, self.F = S, F
        self.n = [s + f for s, f in zip(S, F, strict=True)]
        self.succ_s = [
            self.code[s + 1][f] if s + f < cap else -1 for s, f in zip(S, F, strict=True)
        ]
        self.succ_f = [
            self.code[s][f + 1] if s + f < cap else -1 for s, f in zip(S, F, strict=True)
        ]
        fn = get_utility(params.utility)
        u = np.asarray(fn(np.asarray(S, dtype=np.int64), np.asarray(F, dtype=np.int64)))
        self.util: list[float] = [float(x) for x in u.astype(np.float64).reshape(-1)]
        if len(self.util) != len(S):
            raise ValueError(
                f"utility {params.utility!r} returned {len(self.util)} values for {len(S)} "
                "counts: it must be vectorised elementwise over numpy arrays"
            )
        a, b = prior_arrays(params)
        self.prior = [(float(a[g[0]]), float(b[g[0]])) for g in self.groups]
        self.ps: list[list[float]] = []
        self.pf: list[list[float]] = []
        for ga, gb in self.prior:
            self.ps.append([posterior_mean(ga, gb, s, f) for s, f in zip(S, F, strict=True)])
            self.pf.append([(gb + f) / (ga + gb + s + f) for s, f in zip(S, F, strict=True)])
        self._pmf: dict[tuple[int, int, int], list[float]] = {}
        self._group_cache: dict[tuple[int, int], list[Key]] = {}

    # -- folding -------------------------------------------------------------------------------

    def fold(self, successes: ArrayLike, failures: ArrayLike) -> tuple[Key, list[int]]:
        """The folded key of unfolded counts, and the question index at each key position."""
        s = _as_counts("successes", successes, self.B)
        f = _as_counts("failures", failures, self.B)
        n = s + f
        if np.any(n > self.cap):
            i = int(np.flatnonzero(n > self.cap)[0])
            raise ValueError(f"question {i} has {int(n[i])} rollouts, above the cap {self.cap}")
        codes = [self.code[int(si)][int(fi)] for si, fi in zip(s, f, strict=True)]
        key: list[int] = []
        order: list[int] = []
        for g in self.groups:
            members = sorted(g, key=lambda i: (codes[i], i))
            order.extend(members)
            key.extend(codes[i] for i in members)
        return tuple(key), order

    # -- enumeration of the states of a level ---------------------------------------------------

    def _group_states(self, m: int, total: int, P: int) -> list[Key]:
        """Non-decreasing code tuples of length m, each n in [P, cap], with Σ n = total."""
        cap, code = self.cap, self.code
        out: list[Key] = []
        prefix: list[int] = []

        def rec(m_left: int, left: int, s0: int, f0: int) -> None:
            if m_left == 0:
                if left == 0:
                    out.append(tuple(prefix))
                return
            lo = max(P, left - (m_left - 1) * cap)
            hi = min(cap, left - (m_left - 1) * P)
            for s in range(s0, hi + 1):
                f_lo = max(lo - s, f0 if s == s0 else 0)
                for f in range(f_lo, hi - s + 1):
                    prefix.append(code[s][f])
                    rec(m_left - 1, left - s - f, s, f)
                    prefix.pop()

        if m * P <= total <= m * cap:
            rec(m, total, 0, 0)
        return out

    def level_states(self, t: int) -> Iterator[Key]:
        """Every folded state whose rollouts add up to t."""
        sizes = [len(g) for g in self.groups]
        pilots = self.pilots
        if len(sizes) == 1:
            yield from self._group_states(sizes[0], t, pilots[0])
            return
        cap = self.cap
        lows = [m * P for m, P in zip(sizes, pilots, strict=True)]

        def parts(gi: int, left: int) -> Iterator[tuple[int, ...]]:
            if gi == len(sizes) - 1:
                if lows[gi] <= left <= sizes[gi] * cap:
                    yield (left,)
                return
            rest_lo = sum(lows[gi + 1 :])
            rest_hi = sum(sizes[gi + 1 :]) * cap
            for tg in range(
                max(lows[gi], left - rest_hi), min(sizes[gi] * cap, left - rest_lo) + 1
            ):
                for tail in parts(gi + 1, left - tg):
                    yield (tg, *tail)

        for totals in parts(0, t):
            lists = []
            for gi, tg in enumerate(totals):
                ck = (gi, tg)
                if ck not in self._group_cache:
                    self._group_cache[ck] = self._group_states(sizes[gi], tg, pilots[gi])
                lists.append(self._group_cache[ck])
            for combo in itertools.product(*lists):
                yield tuple(itertools.chain.from_iterable(combo))

    # -- transitions ----------------------------------------------------------------------------

    def pmf(self, g: int, c: int, k: int) -> list[float]:
        """Beta-binomial(k, a + s, b + f) probabilities of 0..k successes for class c of group g."""
        ck = (g, c, k)
        out = self._pmf.get(ck)
        if out is None:
            a0, b0 = self.prior[g]
            out = beta_binomial_pmf(k, a0 + self.S[c], b0 + self.F[c])
            self._pmf[ck] = out
        return out


def _as_counts(name: str, value: ArrayLike, B: int) -> NDArray[np.int64]:
    arr = np.asarray(value)
    if arr.shape != (B,):
        raise ValueError(f"{name} must have shape ({B},), got {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.rint(arr)):
            raise ValueError(f"{name} must be whole numbers, got {arr.tolist()}")
    elif arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integer counts, got dtype {arr.dtype}")
    out = arr.astype(np.int64)
    if np.any(out < 0):
        raise ValueError(f"{name} must be non-negative, got {out.tolist()}")
    return out


def beta_binomial_pmf(k: int, a: float, b: float) -> list[float]:
    """P(X = x), x = 0..k, X ~ Beta-binomial(k, a, b) (``adaroll_env.utilities``, in log space)."""
    return np.exp(beta_binomial_logpmf(np.arange(k + 1), k, a, b)).tolist()  # type: ignore[no-any-return]


@lru_cache(maxsize=4096)
def _partitions(total: int, parts: int, maxpart: int) -> tuple[tuple[int, ...], ...]:
    """Non-increasing tuples of ``parts`` integers in [0, maxpart] summing to ``total``."""
    if parts == 0:
        return ((),) if total == 0 else ()
    out: list[tuple[int, ...]] = []
    for first in range(min(total, maxpart), -1, -1):
        if first * parts < total:
            break
        for tail in _partitions(total - first, parts - 1, first):
            out.append((first, *tail))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# The solver
# ---------------------------------------------------------------------------------------------


class _Solver:
    """Backward induction over the folded states; values for every visited state."""

    def __init__(self, layout: _Layout) -> None:
        self.layout = layout
        self.params = layout.params
        self.values: dict[Key, float] = {}
        self.policy: dict[Key, Any] = {}
        #: pending counts are at most the cap: entries code·radix + pending sort by (code, pending)
        self.radix = layout.cap + 1
        self.group_of = [g for g, (a, b) in enumerate(layout.bounds) for _ in range(a, b)]
        self.pending_memo: dict[Key, float] = {}

    # -- Q values ------------------------------------------------------------------------------

    def q_sequential(self, key: Key) -> list[tuple[Any, float]]:
        """[(key position of the class's first question, Q)] for every class below the cap."""
        L = self.layout
        values = self.values
        succ_s, succ_f = L.succ_s, L.succ_f
        out = []
        for g, (start, end) in enumerate(L.bounds):
            ps, pf = L.ps[g], L.pf[g]
            prev = -1
            for j in range(start, end):
                c = key[j]
                if c == prev:
                    continue
                prev = c
                cs = succ_s[c]
                if cs < 0:
                    continue
                cf = succ_f[c]
                head = key[:j]
                pos = bisect_right(key, cs, j + 1, end)
                ks = head + key[j + 1 : pos] + (cs,) + key[pos:]
                pos = bisect_right(key, cf, j + 1, end)
                kf = head + key[j + 1 : pos] + (cf,) + key[pos:]
                out.append((j, ps[c] * values[ks] + pf[c] * values[kf]))
        return out

    def round_actions(self, key: Key, r: int) -> list[Counts]:
        """Folded round decisions: counts per key position summing to r, caps respected,
        non-increasing inside each class (a run of equal codes)."""
        L = self.layout
        runs: list[tuple[int, int, int]] = []  # (start, mult, room)
        for start, end in L.bounds:
            j = start
            while j < end:
                c = key[j]
                k = j + 1
                while k < end and key[k] == c:
                    k += 1
                runs.append((j, k - j, L.cap - L.n[c]))
                j = k
        room_after = [0] * (len(runs) + 1)
        for ri in range(len(runs) - 1, -1, -1):
            room_after[ri] = room_after[ri + 1] + runs[ri][1] * runs[ri][2]
        out: list[Counts] = []
        counts = [0] * L.B

        def rec(ri: int, left: int) -> None:
            if ri == len(runs):
                if left == 0:
                    out.append(tuple(counts))
                return
            start, mult, room = runs[ri]
            for x in range(min(left, mult * room), max(0, left - room_after[ri + 1]) - 1, -1):
                for part in _partitions(x, mult, room):
                    counts[start : start + mult] = part
                    rec(ri + 1, left - x)
            counts[start : start + mult] = [0] * mult

        rec(0, r)
        return out

    def q_round(self, key: Key, counts: Counts) -> float:
        """Expected next value of a round decision (counts per key position)."""
        M = self.radix
        z: list[int] = []
        for start, end in self.layout.bounds:
            z.extend(sorted(key[j] * M + counts[j] for j in range(start, end)))
        return self.pending_value(tuple(z), 0)

    def pending_value(self, z: Key, j0: int) -> float:
        """E[V] of a state with rollouts pending: each entry is code·radix + pending count.

        ``z`` has at least one pending entry, none before position ``j0``. The round's outcomes
        are independent across questions, so they are resolved one question at a time (the
        first pending entry), memoised on the folded pending state: decisions that share part
        of a round share its partial expectations.
        """
        memo = self.pending_memo
        v = memo.get(z)
        if v is not None:
            return v
        L, M = self.layout, self.radix
        j = j0
        while z[j] % M == 0:
            j += 1
        last = True
        for e in z[j + 1 :]:
            if e % M:
                last = False
                break
        g = self.group_of[j]
        end = L.bounds[g][1]
        zc = z[j]
        code, c = divmod(zc, M)
        s0, f0 = L.S[code], L.F[code]
        pmf = L.pmf(g, code, c)
        row = L.code
        v = 0.0
        if last:
            # Every other entry is settled: the children are plain states with known values.
            values = self.values
            plain = tuple(e // M for e in z)
            head = plain[:j]
            for x in range(c + 1):
                nc = row[s0 + x][f0 + c - x]
                pos = bisect_right(plain, nc, j + 1, end)
                v += pmf[x] * values[head + plain[j + 1 : pos] + (nc,) + plain[pos:]]
        else:
            head = z[:j]
            for x in range(c + 1):
                nz = row[s0 + x][f0 + c - x] * M
                pos = bisect_right(z, nz, j + 1, end)
                child = head + z[j + 1 : pos] + (nz,) + z[pos:]
                cv = memo.get(child)
                if cv is None:
                    cv = self.pending_value(child, j)
                v += pmf[x] * cv
        memo[z] = v
        return v

    def q_rounds(self, key: Key, r: int) -> list[tuple[Any, float]]:
        return [(a, self.q_round(key, a)) for a in self.round_actions(key, r)]

    # -- backward induction ----------------------------------------------------------------------

    def solve(self) -> float:
        L, params = self.layout, self.params
        levels = decision_levels(params)
        util = L.util
        values, policy = self.values, self.policy
        for key in L.level_states(levels[-1]):
            total = 0.0
            for c in key:
                total += util[c]
            values[key] = total
        sequential = params.mode == "sequential"
        for t in reversed(levels[:-1]):
            r = round_size_at(params, t)
            for key in L.level_states(t):
                qs = self.q_sequential(key) if sequential else self.q_rounds(key, r)
                best = max(q for _, q in qs)
                tol = TIE_TOL * max(1.0, abs(best))
                tied = tuple(a for a, q in qs if q >= best - tol)
                values[key] = best
                policy[key] = tied[0] if sequential and len(tied) == 1 else tied
            self.pending_memo.clear()
        return self.start_value()

    def start_value(self) -> float:
        """The value before the pilot: the pilot round's outcomes averaged over V."""
        L = self.layout
        if not any(L.pilots):
            return self.values[tuple([0] * L.B)]
        zero = L.code[0][0]
        pilot = [P for g, P in zip(L.groups, L.pilots, strict=True) for _ in g]  # key order
        return self.q_round(tuple([zero] * L.B), tuple(pilot))


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ExactSolution:
    """The Bayes-optimal policy and value of one ``AllocationParams`` (from ``solve_exact``).

    Attributes:
        params: the instance solved.
        value: the optimal expected final utility from the start of the episode, pilot
            outcomes included (the BAMDP value).
        num_states: folded states visited (equals ``estimate_states(params)``).
    """

    params: AllocationParams
    value: float
    num_states: int
    _solver: _Solver = field(repr=False)

    def _fold(self, successes: ArrayLike, failures: ArrayLike) -> tuple[Key, list[int]]:
        return self._solver.layout.fold(successes, failures)

    def _decision_key(self, successes: ArrayLike, failures: ArrayLike) -> tuple[Key, list[int]]:
        key, order = self._fold(successes, failures)
        if key not in self._solver.policy:
            raise ValueError(
                f"successes={np.asarray(successes).tolist()}, failures="
                f"{np.asarray(failures).tolist()} is not a decision state of this instance "
                "(budget spent, before the pilot, below the pilot, or off the rounds grid)"
            )
        return key, order

    def _unfold(self, action: Any, order: list[int]) -> Counts:
        out = [0] * self.params.num_questions
        if isinstance(action, int):
            out[order[action]] = 1
        else:
            for pos, c in enumerate(action):
                out[order[pos]] = c
        return tuple(out)

    def action(self, successes: ArrayLike, failures: ArrayLike) -> NDArray[np.int64]:
        """An optimal decision at these counts, as int64 counts per question (shape [B]).

        Among tied optimal decisions, the lexicographically largest counts vector: in
        sequential mode the lowest question index; inside a class of identical questions
        (same prior, same counts) the lowest indices get the largest counts.
        """
        key, order = self._decision_key(successes, failures)
        entry = self._solver.policy[key]
        cands = (entry,) if isinstance(entry, int) else entry
        best = max(self._unfold(a, order) for a in cands)
        return np.asarray(best, dtype=np.int64)

    def q_values(self, successes: ArrayLike, failures: ArrayLike) -> dict[Counts, float]:
        """{counts vector: expected final utility} for one representative of every folded
        decision at these counts (the one ``action`` would pick among its symmetric copies)."""
        key, order = self._decision_key(successes, failures)
        solver = self._solver
        if self.params.mode == "sequential":
            qs = solver.q_sequential(key)
        else:
            n = int(np.sum(successes) + np.sum(failures))
            r = round_size_at(self.params, n)
            qs = solver.q_rounds(key, r)
        return {self._unfold(a, order): q for a, q in qs}

    def state_value(self, successes: ArrayLike, failures: ArrayLike) -> float:
        """V at these counts (a decision state or a terminal one)."""
        key, _ = self._fold(successes, failures)
        try:
            return self._solver.values[key]
        except KeyError:
            raise ValueError(
                f"successes={np.asarray(successes).tolist()}, failures="
                f"{np.asarray(failures).tolist()} is not a state this solution visited"
            ) from None


def solve_exact(params: AllocationParams, *, max_states: int = DEFAULT_MAX_STATES) -> ExactSolution:
    """Solve the BAMDP of ``params`` exactly by backward induction over folded states.

    Raises ValueError when ``estimate_states(params)`` exceeds ``max_states``.
    """
    if not isinstance(params, AllocationParams):
        raise TypeError(f"solve_exact needs AllocationParams, got {type(params).__name__}")
    count = estimate_states(params, limit=max_states)
    if count > max_states:
        raise ValueError(
            f"the exact BAMDP of B={params.num_questions}, N={params.total_budget}, "
            f"mode={params.mode!r} visits {count:.3g} folded states (at least), more than "
            f"max_states={max_states}: raise max_states if memory allows (~300 bytes a state), "
            "shrink the instance (B, N, max_group), or use the scalable index policy"
        )
    solver = _Solver(_Layout(params))
    value = solver.solve()
    return ExactSolution(params=params, value=value, num_states=len(solver.values), _solver=solver)
