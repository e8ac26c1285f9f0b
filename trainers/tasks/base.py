"""``Task`` and ``Example``: prompts, reference answers and the scorer every task shares.

A :class:`Task` holds a ``train`` and a ``test`` list of :class:`Example` (and, for tasks that
generate one, a ``validation`` list the trainer does not use) and scores completions with either
a :data:`Verifier` ``(completion, example) -> reward`` or TRL-style reward functions
``f(prompts, completions, completion_ids=..., **columns) -> list[float | None]``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Test ids start here so that they never collide with train ids (line indices or 0..n-1).
TEST_ID_OFFSET = 1_000_000
#: Validation ids start here, above every test id of a task smaller than a million prompts.
VALIDATION_ID_OFFSET = 2_000_000


@dataclass(frozen=True)
class Example:
    """One prompt with its reference answer.

    ``id`` is stable and unique within a task (train, validation and test ids are disjoint); the
    trainer keys its per-prompt beliefs by it. ``level`` is the difficulty level (0 = easiest; 0
    when unknown). ``columns`` holds the source row's other scalar fields (jsonl tasks: e.g.
    ``subject``; reasoning-gym tasks: the item's scalar metadata, e.g. ``num_terms``), which
    ``--belief-group <column>`` groups prompts by; it takes no part in equality or hashing.
    """

    id: int
    prompt: str
    answer: str
    level: int = 0
    columns: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def group_key(self, column: str) -> Any:
        """The value of ``column`` (``"level"``: the level) for belief grouping; KeyError if the
        example has no such column."""
        if column == "level":
            return self.level
        return self.columns[column]


class MissingExtraError(ImportError, ValueError):
    """An optional package a task needs is not installed (the message names the extra); a
    ``ValueError`` too, so the command line reports it as a user error, not a traceback."""


def parse_options(query: str) -> list[tuple[str, str]]:
    """The ``key=value`` pairs of a task spec's query (``min_terms=2&operators=+,-``), split on
    ``&`` and the first ``=``, percent-escapes decoded; unlike a URL's query a ``+`` stays a plus
    sign. A pair without ``=`` is an error."""
    from urllib.parse import unquote

    pairs = []
    for part in query.split("&"):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(
                f"task option {part!r} is not key=value: write options as "
                "'?key=value&key=value' after the task name"
            )
        pairs.append((unquote(key.strip()), unquote(value)))
    return pairs


#: ``(completion text, example) -> reward in [0, 1]``.
Verifier = Callable[[str, Example], float]
#: TRL's reward-function signature: ``f(prompts, completions, completion_ids=..., **columns)``.
RewardFunc = Callable[..., Sequence[float | None]]


@dataclass(frozen=True)
class Scores:
    """Rewards of a batch of completions and how many verifier calls raised."""

    rewards: np.ndarray  # float64 [n]
    errors: int  # verifier/reward-function calls that raised (those completions score 0)


class Task:
    """Prompts, answers and a scorer.

    Scoring uses ``reward_funcs`` when given (TRL-style, summed over functions), else ``verifier``.
    A verifier that raises on a completion gives it 0 and counts one error; a reward function that
    raises gives the whole call's completions 0 and counts each of them as an error. Neither
    crashes the trainer. A reward function returning a list of the wrong length is a bug in it and
    raises ``ValueError``.

    ``validation`` is a third held-out split for model selection outside the trainer (empty for
    tasks that have none); ``details`` are task-specific facts that :meth:`describe` reports (a
    generated task's source and options).
    """

    def __init__(
        self,
        name: str,
        train: list[Example],
        test: list[Example],
        *,
        verifier: Verifier | None = None,
        reward_funcs: RewardFunc | Sequence[RewardFunc] | None = None,
        reward_source: str = "",
        validation: list[Example] | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        if verifier is None and reward_funcs is None:
            raise ValueError(f"task {name!r} has no verifier: pass verifier= or reward_funcs=")
        validation = [] if validation is None else validation
        splits = {"train": train, "validation": validation, "test": test}
        ids = {split: [ex.id for ex in rows] for split, rows in splits.items()}
        for split, split_ids in ids.items():
            dup = [i for i, k in Counter(split_ids).items() if k > 1]
            if dup:
                raise ValueError(f"task {name!r}: duplicate {split} ids {dup[:5]}; ids are unique")
        offsets = {"test": TEST_ID_OFFSET, "validation": VALIDATION_ID_OFFSET}
        for a, b in (("train", "test"), ("train", "validation"), ("validation", "test")):
            shared = set(ids[a]) & set(ids[b])
            if shared:
                raise ValueError(
                    f"task {name!r}: ids {sorted(shared)[:5]} are in both {a} and {b}; "
                    f"offset {b} ids (e.g. by {offsets[b]})"
                )
        self.name = name
        self.train = train
        self.validation = validation
        self.test = test
        self.details = dict(details or {})
        self.verifier = verifier
        self.reward_funcs: list[RewardFunc] = _as_func_list(reward_funcs)
        if self.reward_funcs:
            names = " + ".join(getattr(f, "__name__", type(f).__name__) for f in self.reward_funcs)
            reward_source = f"reward_funcs: {names}"
        self.reward_source = reward_source

    def __repr__(self) -> str:
        val = f", validation={len(self.validation)}" if self.validation else ""
        return f"Task({self.name!r}, train={len(self.train)}{val}, test={len(self.test)})"

    def score(
        self,
        examples: Sequence[Example],
        completions: Sequence[str],
        completion_ids: Sequence[Sequence[int]] | None = None,
    ) -> Scores:
        """Score ``completions[i]`` against ``examples[i]``; returns rewards [n] and error count."""
        n = len(completions)
        if len(examples) != n:
            raise ValueError(
                f"score got {len(examples)} examples and {n} completions: pass one example per "
                "completion (repeat an example for each of its samples)"
            )
        if completion_ids is not None and len(completion_ids) != n:
            raise ValueError(
                f"score got {len(completion_ids)} completion_ids for {n} completions: pass one "
                "token-id list per completion, or None"
            )
        if self.reward_funcs:
            return _score_reward_funcs(self.reward_funcs, examples, completions, completion_ids)
        assert self.verifier is not None
        rewards = np.zeros(n, dtype=np.float64)  # [n]
        errors = 0
        for i, (example, completion) in enumerate(zip(examples, completions, strict=True)):
            try:
                rewards[i] = float(self.verifier(completion, example))
            except Exception:
                errors += 1
        return Scores(rewards=rewards, errors=errors)

    def describe(self) -> dict[str, Any]:
        """Name, split sizes, level histograms, reward source and the longest prompt + answer
        in characters over all splits (what a warm start sizes its context by: the tiny model's
        character tokenizer spends one token per character, plus BOS and EOS), for run logs;
        then the task's ``details``, if any."""
        splits = {"train": self.train, "validation": self.validation, "test": self.test}
        everything = [ex for rows in splits.values() for ex in rows]
        out: dict[str, Any] = {
            "name": self.name,
            "num_train": len(self.train),
            "num_validation": len(self.validation),
            "num_test": len(self.test),
            "levels": {
                split: dict(sorted(Counter(ex.level for ex in rows).items()))
                for split, rows in splits.items()
            },
            "reward": self.reward_source,
            "longest_prompt_answer_chars": max(
                (len(ex.prompt) + len(ex.answer) for ex in everything), default=0
            ),
        }
        if self.details:
            out["details"] = self.details
        return out


def _as_func_list(reward_funcs: RewardFunc | Sequence[RewardFunc] | None) -> list[RewardFunc]:
    if reward_funcs is None:
        return []
    funcs = [reward_funcs] if callable(reward_funcs) else list(reward_funcs)
    for f in funcs:
        if not callable(f):
            raise TypeError(
                f"reward_funcs entries must be callables f(prompts, completions, **kwargs), "
                f"got {type(f).__name__}: pass a function or a list of functions"
            )
    return funcs


def _score_reward_funcs(
    funcs: Sequence[RewardFunc],
    examples: Sequence[Example],
    completions: Sequence[str],
    completion_ids: Sequence[Sequence[int]] | None,
) -> Scores:
    n = len(completions)
    prompts = [ex.prompt for ex in examples]
    columns: dict[str, Any] = {
        "answer": [ex.answer for ex in examples],
        "level": [ex.level for ex in examples],
        "id": [ex.id for ex in examples],
    }
    ids = None if completion_ids is None else [list(c) for c in completion_ids]
    total = np.zeros(n, dtype=np.float64)  # [n]
    for f in funcs:
        try:
            out = list(f(prompts, list(completions), completion_ids=ids, **columns))
        except Exception:
            return Scores(rewards=np.zeros(n, dtype=np.float64), errors=n)
        name = getattr(f, "__name__", type(f).__name__)
        if len(out) != n:
            raise ValueError(
                f"reward function {name!r} returned {len(out)} rewards for {n} completions: "
                "return one float (or None) per completion"
            )
        total += np.array([0.0 if r is None else float(r) for r in out], dtype=np.float64)
    return Scores(rewards=total, errors=0)
