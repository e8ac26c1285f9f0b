"""The configuration of ``adaroll bench``: the grid of settings and the env arguments of each."""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import os
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

import adaroll_env
from adaroll_env import model as am
from adaroll_env.envs import OUTCOMES
from adaroll_env.errors import unknown_name
from adaroll_env.priors import resolve_difficulty
from adaroll_env.utilities import get_utility
from agents.registry import list_allocators, parse_allocator_kwargs_by_spec

ENV_KINDS = {"sequential": "AdaRoll/BetaBernoulli-v0", "rounds": "AdaRoll/BetaBernoulliRounds-v0"}


#: Allocators that read the hidden truth: reported as references, never ranked.
REFERENCE_ONLY = frozenset({"oracle"})


#: The options that build the grid; with ``from_run`` each run's config sets them instead.
GRID_FIELDS = (
    "allocators",
    "envs",
    "difficulties",
    "utilities",
    "num_questions",
    "group_sizes",
    "pilot",
    "pilot_threshold",
    "max_group",
    "round_size",
    "rounds",
    "belief",
    "allocator_kwargs",
)


#: Bins of the final posterior mean for the "rollouts placed" plot.
MEAN_BINS = 10


def _split(text: str) -> list[str]:
    """Split a comma-separated list, keeping commas inside parentheses (at any depth):
    "rlvr,beta(1,2)" gives ["rlvr", "beta(1,2)"]; empty items are dropped."""
    text = str(text)
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            break
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise ValueError(
            f"{text!r} has unbalanced parentheses: close each one, e.g. 'rlvr,beta(0.5, 2)'"
        )
    items.append(text[start:])
    return [t.strip() for t in items if t.strip()]


@dataclass
class BenchConfig:
    """Configuration of ``adaroll bench`` (every list is one comma-separated string)."""

    allocators: str = field(
        default="all",
        metadata={
            "help": "comma-separated allocator specs (names, 'module:Class', 'sb3:<zip>'), or "
            "'all' (every registered one, and sb3:pretrained when the sb3 extra is installed)"
        },
    )
    envs: str = field(
        default="rounds",
        metadata={"help": "env kinds: 'sequential' (BetaBernoulli-v0), 'rounds' (-Rounds-v0)"},
    )
    difficulties: str = field(
        default="rlvr", metadata={"help": "difficulty profiles or pass-rate files, comma-separated"}
    )
    utilities: str = field(default="snr(8)", metadata={"help": "utilities, comma-separated"})
    num_questions: int = field(default=64, metadata={"help": "B, questions per batch"})
    group_sizes: str = field(
        default="8", metadata={"help": "G values (budget N = G·B), comma-separated"}
    )
    pilot: int = field(default=0, metadata={"help": "rollouts every question gets first"})
    pilot_threshold: float = field(
        default=0.0,
        metadata={
            "help": "skip the pilot for a question whose prior gives it less than this chance of "
            "a success, or of a failure; the first round takes what was skipped (0: none skip)"
        },
    )
    max_group: int | None = field(
        default=None, metadata={"help": "cap on rollouts per question (none: no cap)"}
    )
    outcomes: str = field(
        default="binomial",
        metadata={
            "help": "how the envs draw rollout outcomes: binomial (the default) or common "
            "(common random numbers: a question's k-th rollout succeeds on the same draw "
            "whichever allocator asks for it, so paired differences stay paired and their "
            "intervals narrow)"
        },
    )
    round_size: int | None = field(
        default=None, metadata={"help": "R for the rounds env (none: R = B); excludes --rounds"}
    )
    rounds: str = field(
        default="",
        metadata={
            "help": "decision rounds per episode, comma-separated (e.g. '1,2,3,4,8'): equal "
            "rounds of ceil(N/rounds) rollouts, N pilot included, as adaroll grpo's --rounds; "
            "a value with '+' is a rounds schedule, its round sizes in rollouts summing to "
            "N minus the pilot, as adaroll grpo's --round-schedule (e.g. '1,2,384+128,448+64' "
            "at N = 512); one grid point per value, rounds env only; excludes --round-size "
            "('': R = B)"
        },
    )
    belief: str = field(
        default="matched",
        metadata={"help": "'matched' (Beta fitted to the difficulty) or 'a,b' for Beta(a, b)"},
    )
    episodes: int = field(default=300, metadata={"help": "episodes per allocator and setting"})
    seed: int = field(default=0, metadata={"help": "master seed; every other seed derives from it"})
    workers: int = field(default=0, metadata={"help": "worker processes (0: one per core)"})
    out: str = field(default="runs", metadata={"help": "folder under which the run directory goes"})
    name: str = field(default="", metadata={"help": "run directory name ('': bench-<time>)"})
    plots: bool = field(default=True, metadata={"help": "write PNG plots"})
    exact: bool = field(
        default=True,
        metadata={"help": "add exact outcome-tree values where the instance is small enough"},
    )
    exact_max_states: int = field(
        default=50_000, metadata={"help": "largest outcome tree (states) to evaluate exactly"}
    )
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})
    wide: bool = field(
        default=False,
        metadata={
            "help": "print every column even past the terminal's width (otherwise columns that "
            "do not fit are left out of the printed tables; table.md has them all)"
        },
    )
    allocator_kwargs: str = field(
        default="",
        metadata={
            "help": "JSON object from allocator spec to its keyword arguments, e.g. "
            '\'{"thompson": {"max_horizon": 8}}\' (checked against each constructor)'
        },
    )
    from_run: list[str] = field(
        default_factory=list,
        metadata={
            "help": "sim-to-real check instead of the grid: run directories of adaroll grpo or "
            "competition directories of adaroll compete; each run's allocator, utility, budget, "
            "rounds and pool are simulated on pass rates fitted to its beliefs.json and compared "
            "with its metrics.jsonl (the grid options then stay at their defaults)",
            "metavar": "DIR",
        },
    )
    live_steps: int | None = field(
        default=None,
        metadata={
            "help": "with --from-run: the last steps of each run whose live figures are compared "
            "(0: all steps; none: the steps its beliefs.json evidence spans, one pass over the "
            "store's prompts and at least 1/(1 - decay) steps)"
        },
    )

    def __post_init__(self) -> None:
        if isinstance(self.from_run, (str, os.PathLike)):  # one directory given from Python
            self.from_run = [os.fspath(self.from_run)]
        self.from_run = [os.fspath(d) for d in self.from_run]
        for kind in self.env_kinds:
            if kind not in ENV_KINDS:
                raise unknown_name("env kind", kind, ENV_KINDS, "Give them comma-separated.")
        for d in self.difficulty_list:
            resolve_difficulty(d)
        for u in self.utility_list:
            get_utility(u)
        if not self.group_size_list:
            raise ValueError("group_sizes is empty: give at least one G, e.g. '8'")
        if self.outcomes not in OUTCOMES:
            raise unknown_name("outcomes", self.outcomes, OUTCOMES)
        if self.episodes < 2:
            raise ValueError(
                f"episodes must be >= 2 for a confidence interval, got {self.episodes}"
            )
        if self.num_questions < 1:
            raise ValueError(f"num_questions must be >= 1, got {self.num_questions}")
        if self.workers < 0:
            raise ValueError(f"workers must be >= 0 (0: one per core), got {self.workers}")
        self.belief_value()
        self._check_rounds()
        if self.from_run:
            self._check_from_run()
        elif self.live_steps is not None:
            raise ValueError(
                f"live_steps ({self.live_steps}) applies to --from-run only: give the run "
                "directories with --from-run DIR, or drop --live-steps"
            )
        if not _split(self.allocators):
            raise ValueError("allocators is empty: give specs like 'uniform,random' or 'all'")
        self._allocator_kwargs = parse_allocator_kwargs_by_spec(
            self.allocator_list, self.allocator_kwargs
        )

    def _check_rounds(self) -> None:
        """``rounds``: positive integers, the rounds env only, not beside ``round_size``."""
        rounds = self.rounds_list
        if not rounds:
            return
        if self.round_size is not None:
            raise ValueError(
                f"rounds ({self.rounds!r}) and round_size ({self.round_size}) are both set: give "
                "one (rounds sets R = ceil(N / rounds) for each value)"
            )
        if "sequential" in self.env_kinds:
            raise ValueError(
                f"rounds ({self.rounds!r}) applies to the rounds env only; envs is "
                f"{self.envs!r}: use --envs rounds (the sequential env decides one rollout at "
                "a time)"
            )
        for spec in (k for k in rounds if isinstance(k, str)):
            for G in self.group_size_list:
                left = (G - self.pilot) * self.num_questions
                try:
                    am.parse_round_schedule(spec, left)
                except (TypeError, ValueError) as exc:
                    raise ValueError(
                        f"rounds schedule {spec!r} does not fit G = {G} (N = {G}·"
                        f"{self.num_questions}, {left} rollouts after the pilot): {exc}"
                    ) from None
        equal = [k for k in rounds if isinstance(k, int)]
        smallest = min(self.group_size_list) * self.num_questions
        if equal and max(equal) > smallest:
            raise ValueError(
                f"rounds {max(equal)} exceeds the smallest budget N = G·B = {smallest}: a "
                "round hands out at least one rollout; give fewer rounds"
            )

    def _check_from_run(self) -> None:
        """With ``from_run`` the grid comes from each run: grid options must stay unset."""
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        changed = [name for name in GRID_FIELDS if getattr(self, name) != defaults[name]]
        if changed:
            flags = ", ".join("--" + n.replace("_", "-") for n in changed)
            raise ValueError(
                f"--from-run takes the allocator, utility, budget, rounds, pool, pilot and cap "
                f"from each run's config.json, so {flags} would be ignored: drop them (the "
                "options that apply are --episodes, --seed, --workers, --live-steps, --out, "
                "--name, --progress)"
            )
        if self.live_steps is not None and self.live_steps < 0:
            raise ValueError(
                f"live_steps must be >= 0 (0: all steps; none: the steps the evidence spans), got "
                f"{self.live_steps}"
            )

    def allocator_kwargs_of(self, spec: str) -> dict[str, Any]:
        """The keyword arguments allocator ``spec`` is built with (``allocator_kwargs``)."""
        return dict(self._allocator_kwargs.get(spec, {}))

    @property
    def env_kinds(self) -> list[str]:
        """Env kinds to run."""
        return _split(self.envs)

    @property
    def difficulty_list(self) -> list[str]:
        """Difficulty specs to run."""
        return _split(self.difficulties)

    @property
    def utility_list(self) -> list[str]:
        """Utilities to run."""
        return _split(self.utilities)

    @property
    def group_size_list(self) -> list[int]:
        """G values to run."""
        out = []
        for g in _split(self.group_sizes):
            try:
                out.append(int(g))
            except ValueError:
                raise ValueError(
                    f"group size {g!r} is not an integer: give e.g. '4,8,16'"
                ) from None
        return out

    @property
    def rounds_list(self) -> list[int | str]:
        """Decision rounds per episode to run (empty: the round size decides): an int for equal
        rounds, a string ``"384+128"`` for a rounds schedule (checked in ``_check_rounds``)."""
        out: list[int | str] = []
        for k in _split(self.rounds):
            if "+" in k:
                parts = [p.strip() for p in k.split("+")]
                if not all(p.isdigit() and int(p) > 0 for p in parts):
                    raise ValueError(
                        f"rounds schedule {k!r} must be round sizes in rollouts joined by '+', "
                        "e.g. '384+128' (summing to N minus the pilot)"
                    )
                out.append("+".join(str(int(p)) for p in parts))
                continue
            try:
                value = int(k)
            except ValueError:
                raise ValueError(f"rounds {k!r} is not an integer: give e.g. '1,2,3,4,8'") from None
            if value < 1:
                raise ValueError(f"rounds must be >= 1 each, got {value} in {self.rounds!r}")
            out.append(value)
        return out

    @property
    def allocator_list(self) -> list[str]:
        """Allocator specs, ``uniform`` first (it is the baseline of every gain)."""
        specs = _split(self.allocators)
        if specs == ["all"]:
            specs = list_allocators()
            if importlib.util.find_spec("stable_baselines3") is not None:
                specs.append("sb3:pretrained")  # the shipped learned allocator (sb3 extra)
        return ["uniform", *[s for s in specs if s != "uniform"]]

    def belief_value(self) -> str | tuple[float, float]:
        """The ``belief`` env argument."""
        if self.belief.strip() == "matched":
            return "matched"
        parts = _split(self.belief)
        try:
            a, b = (float(x) for x in parts)
        except ValueError:
            raise ValueError(
                f"belief {self.belief!r} must be 'matched' or 'a,b' (e.g. '0.5,0.5')"
            ) from None
        return (a, b)


@dataclass(frozen=True)
class Setting:
    """One cell of the grid (everything but the allocator)."""

    env: str
    difficulty: str
    utility: str
    group_size: int
    #: equal rounds per episode, a rounds schedule "384+128", or None (the round size decides)
    rounds: int | str | None = None

    @property
    def key(self) -> str:
        """A short label."""
        key = f"{self.env}/{self.difficulty}/{self.utility}/G={self.group_size}"
        return key if self.rounds is None else f"{key}/rounds={self.rounds}"


def settings(cfg: BenchConfig) -> list[Setting]:
    """The grid of settings, in a stable order."""
    rounds: list[int | str | None] = list(cfg.rounds_list) or [None]
    return [
        Setting(e, d, u, g, k)
        for e, d, u, g, k in itertools.product(
            cfg.env_kinds, cfg.difficulty_list, cfg.utility_list, cfg.group_size_list, rounds
        )
    ]


def env_kwargs(cfg: BenchConfig, setting: Setting, spec: str = "") -> dict[str, Any]:
    """Arguments of ``gym.make`` for a setting (with the truth revealed for reference-only
    allocators such as ``oracle``; revealing changes no random draw, so pairing holds)."""
    budget = setting.group_size * cfg.num_questions
    kw: dict[str, Any] = {
        "num_questions": cfg.num_questions,
        "budget": budget,
        "pilot": cfg.pilot,
        "max_group": cfg.max_group,
        "utility": setting.utility,
        "difficulty": setting.difficulty,
        "belief": cfg.belief_value(),
    }
    if setting.env == "rounds" and cfg.round_size is not None:
        kw["round_size"] = cfg.round_size
    if isinstance(setting.rounds, str):  # a schedule: the env parses it against N − pilot·B
        kw["round_schedule"] = setting.rounds
    elif setting.rounds is not None:
        kw["round_size"] = am.step_round_size(budget, 1, adaptive=True, rounds=setting.rounds)
    if cfg.pilot_threshold:
        kw["pilot_threshold"] = cfg.pilot_threshold
    if cfg.outcomes != "binomial":
        kw["outcomes"] = cfg.outcomes
    if spec in REFERENCE_ONLY:
        kw["reveal_truth"] = True
    return kw


def make_env(env: str, kwargs: dict[str, Any]) -> gym.Env:
    """An adaroll env of the given kind (sequential or rounds)."""
    gym.register_envs(adaroll_env)
    return gym.make(ENV_KINDS[env], **kwargs)
