"""Allocators under training's priors: one prior per prompt, in rounds, in a Bayes setting.

The simulator's rounds grid (``scripts/bench_bamdp.py --parts rounds``) gives every question of
an episode one shared prior (or a handful). Training does not: the belief store gives each
prompt its level's fitted prior plus its own decayed history, so a step's 64 prompts carry dozens
of distinct priors, and ``bamdp``'s rounds-aware plan (built for at most ``MAX_EXACT_PRIORS``)
gives way to the index rule. This benchmark measures allocators in that setting:

- **priors** from a run's ``beliefs.json`` (``--beliefs``; default: the level priors below,
  shaped like those an arithmetic run fits): each question draws a level's group prior, and
  with probability ``history`` also carries a stored prompt's counts of that level, discounted
  by ``decay**age`` for an age drawn from 1..``max_age`` steps;
- **truth** p_i ~ Beta(prior_i): the Bayes setting, where the belief is right by construction
  and the ranking measures the policy alone;
- **coupled draws**: rollout j of question i succeeds when u_ij < p_i, with the same u for every
  allocator of an episode, so differences are paired and small CIs mean something;
- **rows**: mean final utility (``utility``, summed over questions), the gain over ``uniform``
  with a paired 95 % t-interval, and each allocator's paired difference with the reference
  (``bamdp`` with ``last_round="index"``, the rule training used before the exact last round).

``python scripts/bench_per_prompt.py [--beliefs runs/.../beliefs.json] [--episodes 200]``
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from adaroll_env.utilities import get_utility

#: level priors (alpha, beta) shaped like an arithmetic run's fitted ones: easy levels mostly
#: solved, hard ones hopeless, a few in between
DEFAULT_LEVEL_PRIORS: tuple[tuple[float, float], ...] = (
    (3.0, 0.3),
    (16.0, 0.9),
    (1.2, 0.6),
    (0.9, 0.8),
    (1.4, 0.08),
    (0.4, 1.5),
    (0.001, 10_000.0),
    (0.001, 10_000.0),
)
#: the reference row: bamdp as training ran it before the exact last round
REFERENCE = "bamdp (last round: index)"


@dataclass
class PerPromptConfig:
    """What ``scripts/bench_per_prompt.py`` measures."""

    allocators: str = field(
        default="uniform,bamdp,vip,variance,knowledge_gradient",
        metadata={"help": "allocators compared (the reference row is added)"},
    )
    beliefs: str | None = field(
        default=None,
        metadata={"help": "a run's beliefs.json: its level priors and stored prompts' counts"},
    )
    batch_size: int = field(default=64, metadata={"help": "B: questions per episode"})
    budget: int = field(default=512, metadata={"help": "N: rollouts per episode"})
    rounds: int = field(default=2, metadata={"help": "equal rounds per episode"})
    utility: str = field(default="snr(8)", metadata={"help": "the utility summed at the end"})
    history: float = field(
        default=0.5, metadata={"help": "chance a question carries a stored prompt's counts"}
    )
    decay: float = field(default=0.95, metadata={"help": "per-step discount of stored counts"})
    max_age: int = field(default=40, metadata={"help": "oldest age (steps) of stored counts"})
    episodes: int = field(default=200, metadata={"help": "paired episodes"})
    seed: int = field(default=0, metadata={"help": "master seed"})
    out: str | None = field(default=None, metadata={"help": "also write the rows as JSON here"})

    def __post_init__(self) -> None:
        for name in ("batch_size", "budget", "rounds", "episodes", "max_age"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.budget % self.rounds:
            raise ValueError(
                f"budget {self.budget} must split into {self.rounds} equal rounds: choose a "
                "budget divisible by rounds"
            )
        if not 0.0 <= self.history <= 1.0:
            raise ValueError(f"history must be in [0, 1], got {self.history!r}")
        if not 0.0 < self.decay <= 1.0:
            raise ValueError(f"decay must be in (0, 1], got {self.decay!r}")


@dataclass
class PriorSource:
    """Level priors and, per level, stored (successes, failures) to draw histories from."""

    levels: list[tuple[float, float]]
    stored: list[NDArray[np.float64]]  # per level: [k, 2]

    @classmethod
    def from_beliefs(cls, path: str | Path) -> PriorSource:
        """The group priors and stored counts of a run's ``beliefs.json`` (groups in the order of
        their keys; the store's overall prior for a group without one)."""
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(
                f"beliefs file {str(path)!r} does not exist: give a run directory's beliefs.json "
                "(written by adaroll grpo at each checkpoint)"
            )
        data = json.loads(p.read_text())
        groups = np.asarray(data.get("groups") or [], dtype=np.int64)
        priors: dict[str, Any] = data.get("group_priors") or {}
        keys = sorted({int(g) for g in groups.tolist()})
        if not keys:
            raise ValueError(f"{p.name} holds no grouped prompts: run with --belief-group level")
        overall = tuple(priors.get("*", data["fitted_prior"]))
        s = np.asarray(data["successes"], dtype=np.float64)
        f = np.asarray(data["failures"], dtype=np.float64)
        levels = [tuple(priors.get(str(k), overall)) for k in keys]
        stored = [np.stack([s[groups == k], f[groups == k]], axis=1) for k in keys]
        return cls([(float(a), float(b)) for a, b in levels], stored)

    @classmethod
    def default(cls) -> PriorSource:
        """``DEFAULT_LEVEL_PRIORS``, with histories of 8 rollouts drawn from those priors."""
        rng = np.random.default_rng(12345)
        stored = []
        for a, b in DEFAULT_LEVEL_PRIORS:
            p = rng.beta(a, b, size=200)
            s = rng.binomial(8, p).astype(np.float64)
            stored.append(np.stack([s, 8.0 - s], axis=1))
        return cls(list(DEFAULT_LEVEL_PRIORS), stored)

    def draw(
        self, rng: np.random.Generator, cfg: PerPromptConfig
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """One episode's priors (alpha, beta), rounded to 4 significant digits."""
        B = cfg.batch_size
        level = rng.integers(0, len(self.levels), size=B)
        a = np.array([self.levels[k][0] for k in level])
        b = np.array([self.levels[k][1] for k in level])
        for i in np.flatnonzero(rng.random(B) < cfg.history):
            rows = self.stored[level[i]]
            if rows.shape[0] == 0:
                continue
            s, f = rows[rng.integers(rows.shape[0])]
            w = cfg.decay ** int(rng.integers(1, cfg.max_age + 1))
            a[i] += w * s
            b[i] += w * f
        return _significant(a), _significant(b)


def _significant(x: NDArray[np.float64], digits: int = 4) -> NDArray[np.float64]:
    scale = 10.0 ** (digits - 1 - np.floor(np.log10(np.abs(x))))
    return np.asarray(np.round(x * scale) / scale, dtype=np.float64)


def _allocators(cfg: PerPromptConfig) -> list[tuple[str, str, dict[str, Any]]]:
    """(row name, spec, keyword arguments), the reference row after ``bamdp``."""
    rows: list[tuple[str, str, dict[str, Any]]] = []
    specs = [s.strip() for s in cfg.allocators.split(",") if s.strip()]
    if "uniform" not in specs:
        specs.insert(0, "uniform")
    for spec in specs:
        rows.append((spec, spec, {}))
        if spec == "bamdp":
            rows.append((REFERENCE, "bamdp", {"last_round": "index"}))
    if not any(name == REFERENCE for name, _, _ in rows):
        rows.append((REFERENCE, "bamdp", {"last_round": "index"}))
    return rows


def episode(
    allocator: Any,
    params: Any,
    alpha: NDArray[np.float64],
    beta: NDArray[np.float64],
    truth: NDArray[np.float64],
    draws: NDArray[np.float64],
    utility: str,
    *,
    pilot: int = 0,
) -> float:
    """One episode's final utility: ``pilot`` rollouts to every question, then the allocator's
    rounds until the budget (pilot included) is spent; rollout j of question i succeeds when
    ``draws[i, j] < truth[i]``."""
    B = alpha.size
    s = (draws[:, :pilot] < truth[:, None]).sum(axis=1).astype(np.int64)
    f = pilot - s
    left = params.total_budget - pilot * B
    while left > 0:
        obs = {
            "alpha": (alpha + s).astype(np.float32),
            "beta": (beta + f).astype(np.float32),
            "successes": s.astype(np.float32),
            "rollouts": (s + f).astype(np.float32),
            "budget_left": np.array([left], dtype=np.float32),
        }
        counts = np.asarray(allocator.allocate(obs), dtype=np.int64)
        if int(counts.sum()) <= 0:
            raise RuntimeError(f"{type(allocator).__name__} handed out no rollouts")
        for i in np.flatnonzero(counts):
            n0 = s[i] + f[i]
            k = int(np.count_nonzero(draws[i, n0 : n0 + counts[i]] < truth[i]))
            s[i] += k
            f[i] += counts[i] - k
        left -= int(counts.sum())
    return float(np.sum(get_utility(utility)(s, f)))


def run(cfg: PerPromptConfig, *, progress: bool = True) -> list[dict[str, Any]]:
    """The table's rows (see the module docstring)."""
    import gymnasium as gym

    import adaroll_env  # noqa: F401  (registers the envs)
    import agents

    source = PriorSource.from_beliefs(cfg.beliefs) if cfg.beliefs else PriorSource.default()
    rows = _allocators(cfg)
    results: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    seeds = np.random.SeedSequence(cfg.seed).spawn(cfg.episodes)
    iterator: Any = range(cfg.episodes)
    if progress:
        from rich.progress import track

        iterator = track(iterator, description="episodes", transient=True)
    for ep in iterator:
        rng = np.random.default_rng(seeds[ep])
        alpha, beta = source.draw(rng, cfg)
        truth = rng.beta(alpha, beta)
        draws = rng.random((cfg.batch_size, cfg.budget))
        env = gym.make(
            "AdaRoll/BetaBernoulliRounds-v0",
            num_questions=cfg.batch_size,
            budget=cfg.budget,
            round_size=cfg.budget // cfg.rounds,
            utility=cfg.utility,
            prior_alpha=tuple(alpha.tolist()),
            prior_beta=tuple(beta.tolist()),
        )
        params = env.unwrapped.params  # type: ignore[attr-defined]
        for name, spec, kwargs in rows:
            alloc = agents.make_allocator(spec, params, **kwargs)
            alloc.reset(params, seed=ep)
            results[name].append(episode(alloc, params, alpha, beta, truth, draws, cfg.utility))
    base = np.asarray(results["uniform"])
    ref = np.asarray(results[REFERENCE])
    out = []
    for name, _, _ in rows:
        x = np.asarray(results[name])
        gain, gain_ci = _paired(x, base)
        vs_ref, vs_ref_ci = _paired(x, ref)
        out.append(
            {
                "allocator": name,
                "utility": float(x.mean()),
                "gain": gain,
                "gain_ci": gain_ci,
                "gain_pct": 100.0 * gain / float(base.mean()),
                "vs_reference": vs_ref,
                "vs_reference_ci": vs_ref_ci,
                "episodes": int(x.size),
            }
        )
    return out


def _paired(x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[float, float]:
    """Mean of x − y and the half-width of its 95 % t-interval."""
    from scipy.stats import t

    d = x - y
    if d.size < 2:
        return float(d.mean()), math.nan
    half = float(t.ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size))
    return float(d.mean()), half


def table(rows: list[dict[str, Any]], cfg: PerPromptConfig) -> str:
    """The rows as a markdown table under one line saying the setting."""
    source = f"priors of {cfg.beliefs}" if cfg.beliefs else "the default level priors"
    head = (
        f"B = {cfg.batch_size}, N = {cfg.budget}, {cfg.rounds} equal rounds, {cfg.utility}, "
        f"{source}, history {cfg.history:g} (decay {cfg.decay:g}, age ≤ {cfg.max_age}), "
        f"{cfg.episodes} paired episodes, seed {cfg.seed}; truth drawn from each prior"
    )
    lines = [
        head,
        "",
        "| allocator | utility | gain vs uniform (95 % CI) | vs reference (95 % CI) |",
        "|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['allocator']} | {r['utility']:.3f} | {r['gain']:+.3f} ± {r['gain_ci']:.3f} "
            f"({r['gain_pct']:+.1f} %) | {r['vs_reference']:+.3f} ± {r['vs_reference_ci']:.3f} |"
        )
    lines.append("")
    lines.append(f"Reference: {REFERENCE}, the index rule in every round.")
    return "\n".join(lines)


def main(cfg: PerPromptConfig) -> list[dict[str, Any]]:
    """Run, print the table, and write the rows as JSON when ``out`` is given."""
    rows = run(cfg)
    print(table(rows, cfg))
    if cfg.out:
        Path(cfg.out).write_text(json.dumps({"config": vars(cfg), "rows": rows}, indent=2))
    return rows
