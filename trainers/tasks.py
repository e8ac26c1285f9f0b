"""Tasks for the GRPO trainer: prompts, reference answers and a verifier that scores completions.

A :class:`Task` holds a ``train`` and a ``test`` list of :class:`Example` and scores completions
with either a :data:`Verifier` ``(completion, example) -> reward`` or TRL-style reward functions
``f(prompts, completions, completion_ids=..., **columns) -> list[float | None]``. Built-in tasks:

- ``arithmetic`` — synthetic expressions such as ``"37+5="`` on a graded ladder of difficulty
  levels, scored by exact match; trains a tiny model on CPU in minutes.
- ``jsonl`` — GSM8K/MATH-style local files (``question``/``answer`` or ``problem``/``solution``),
  scored by :func:`answers_match` on :func:`extract_answer` (``math_verify`` when installed).
- ``sample`` — a dozen word problems shipped with the package, for smoke tests.

Held-out evaluation reports pass@1 and pass@k through :func:`pass_at_k`. Only the standard library
and numpy are imported here; ``math_verify`` is imported lazily when present.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import re
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import numpy as np

__all__ = [
    "Example",
    "RewardFunc",
    "Scores",
    "Task",
    "Verifier",
    "answers_match",
    "arithmetic_task",
    "extract_answer",
    "jsonl_task",
    "make_task",
    "pass_at_k",
]

#: Test ids start here so that they never collide with train ids (line indices or 0..n-1).
TEST_ID_OFFSET = 1_000_000


@dataclass(frozen=True)
class Example:
    """One prompt with its reference answer.

    ``id`` is stable and unique within a task (train and test ids are disjoint); the trainer keys
    its per-prompt beliefs by it. ``level`` is the difficulty level (0 = easiest; 0 when unknown).
    """

    id: int
    prompt: str
    answer: str
    level: int = 0


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
    ) -> None:
        if verifier is None and reward_funcs is None:
            raise ValueError(f"task {name!r} has no verifier: pass verifier= or reward_funcs=")
        train_ids = [ex.id for ex in train]
        test_ids = [ex.id for ex in test]
        for split, ids in (("train", train_ids), ("test", test_ids)):
            dup = [i for i, k in Counter(ids).items() if k > 1]
            if dup:
                raise ValueError(f"task {name!r}: duplicate {split} ids {dup[:5]}; ids are unique")
        shared = set(train_ids) & set(test_ids)
        if shared:
            raise ValueError(
                f"task {name!r}: ids {sorted(shared)[:5]} are in both train and test; "
                f"offset test ids (e.g. by {TEST_ID_OFFSET})"
            )
        self.name = name
        self.train = train
        self.test = test
        self.verifier = verifier
        self.reward_funcs: list[RewardFunc] = _as_func_list(reward_funcs)
        if self.reward_funcs:
            names = " + ".join(getattr(f, "__name__", type(f).__name__) for f in self.reward_funcs)
            reward_source = f"reward_funcs: {names}"
        self.reward_source = reward_source

    def __repr__(self) -> str:
        return f"Task({self.name!r}, train={len(self.train)}, test={len(self.test)})"

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
        """Name, split sizes, level histograms and reward source, for run logs."""
        return {
            "name": self.name,
            "num_train": len(self.train),
            "num_test": len(self.test),
            "levels": {
                "train": dict(sorted(Counter(ex.level for ex in self.train).items())),
                "test": dict(sorted(Counter(ex.level for ex in self.test).items())),
            },
            "reward": self.reward_source,
        }


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


# ----------------------------------------------------------------------------------------------
# Arithmetic
# ----------------------------------------------------------------------------------------------

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

    >>> task = arithmetic_task(seed=0, num_train=8, num_test=8)
    >>> len(task.train), len(task.test)
    (8, 8)
    """
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
    caps = [max(1, int(_MAX_TEST_FRACTION * _level_size(lv))) for lv in chosen]
    if num_test > sum(caps):
        raise ValueError(
            f"num_test={num_test} exceeds the {sum(caps)} held-out expressions the levels "
            f"{chosen} allow (20% of each level): lower num_test or add harder levels"
        )
    rng = np.random.default_rng(seed)
    test_counts = _even_split(num_test, caps)
    test: list[Example] = []
    held_out: dict[int, set[tuple[int, str, int]]] = {}
    for lv, count in zip(chosen, test_counts, strict=True):
        seen: set[tuple[int, str, int]] = set()
        while len(seen) < count:
            expr = _draw(rng, lv)
            if expr not in seen:
                seen.add(expr)
                test.append(_arith_example(TEST_ID_OFFSET + len(test), expr, lv))
        held_out[lv] = seen
    if pool not in ("rl", "warmup", "all"):
        raise ValueError(f"pool must be 'rl', 'warmup' or 'all', got {pool!r}")
    train_exprs: list[tuple[tuple[int, str, int], int]] = []
    for lv, count in zip(chosen, _even_split(num_train, [num_train] * len(chosen)), strict=True):
        while count > 0:
            expr = _draw(rng, lv)
            if expr not in held_out[lv] and (pool == "all" or _pool_of(expr) == pool):
                train_exprs.append((expr, lv))
                count -= 1
    order = rng.permutation(len(train_exprs))
    train = [_arith_example(i, *train_exprs[j]) for i, j in enumerate(order)]
    return Task(
        "arithmetic",
        train,
        test,
        verifier=exact_match,
        reward_funcs=reward_funcs,
        reward_source="exact match of the stripped completion",
    )


# ----------------------------------------------------------------------------------------------
# Answers: extraction, matching, pass@k
# ----------------------------------------------------------------------------------------------

_NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?(?:/\d+)?")


def _last_boxed(text: str) -> str | None:
    start = text.rfind("\\boxed")
    while start != -1:
        i = start + len("\\boxed")
        while i < len(text) and text[i] == " ":
            i += 1
        if i < len(text) and text[i] == "{":
            depth = 0
            for j in range(i, len(text)):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    return text[i + 1 : j].strip()
        start = text.rfind("\\boxed", 0, start)
    return None


def extract_answer(text: str) -> str | None:
    r"""The final answer in a completion or solution, or None if there is none.

    The content of the last ``\boxed{...}`` (nested braces kept), else what follows GSM8K's
    ``#### `` on its line, else the last number (``-3``, ``1,234``, ``2.5``, ``3/4``).

    >>> extract_answer("so \\boxed{\\frac{1}{2}}"), extract_answer("6 + 1 = 7\n#### 7")
    ('\\frac{1}{2}', '7')
    """
    boxed = _last_boxed(text)
    if boxed is not None:
        return boxed
    if "####" in text:
        tail = text.rsplit("####", 1)[1].strip()
        line = tail.splitlines()[0].strip() if tail else ""
        if line:
            return line
    numbers = _NUMBER.findall(text)
    return numbers[-1] if numbers else None


_FRAC = re.compile(r"\\d?frac\{([^{}]+)\}\{([^{}]+)\}")


def _normalize(answer: str) -> str:
    s = answer.strip().replace("\\$", "").replace("$", "").replace("\\!", "")
    s = _FRAC.sub(r"(\1)/(\2)", s)
    s = re.sub(r"\s+", "", s).rstrip(".")
    return s


def _as_number(s: str) -> Fraction | None:
    s = s.replace(",", "")
    m = re.fullmatch(r"\(?(-?\d+(?:\.\d+)?)\)?(?:/\(?(-?\d+(?:\.\d+)?)\)?)?", s)
    if m is None:
        return None
    num = Fraction(m.group(1))
    if m.group(2) is None:
        return num
    den = Fraction(m.group(2))
    return None if den == 0 else num / den


@functools.cache
def _math_verify() -> Any:
    """The optional ``math_verify`` module, or None when it is not installed."""
    try:
        import math_verify
    except ImportError:
        return None
    return math_verify


def answers_match(predicted: str | None, reference: str) -> bool:
    r"""Whether a predicted answer equals the reference.

    Numeric equality after normalising (``$``, commas, whitespace, a trailing ``.``, ``42.0``,
    fractions ``3/4`` and ``\frac{3}{4}``), else string equality of the normalised forms; when
    ``math_verify`` is installed and those say no, its symbolic check is tried too. None never
    matches.

    >>> answers_match("$1,000.00", "1000"), answers_match("0.75", "\\frac{3}{4}")
    (True, True)
    """
    if predicted is None:
        return False
    p, r = _normalize(predicted), _normalize(reference)
    pn, rn = _as_number(p), _as_number(r)
    if pn is not None and rn is not None:
        if pn == rn:
            return True
    elif p == r:
        return True
    math_verify = _math_verify()
    if math_verify is None:
        return False
    try:
        gold, target = math_verify.parse(f"${reference}$"), math_verify.parse(f"${predicted}$")
        return bool(math_verify.verify(gold, target))
    except Exception:
        return False


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples of which ``c`` are correct: ``1 - C(n-c, k) / C(n, k)``.

    The estimator of Chen et al. (2021), "Evaluating Large Language Models Trained on Code".

    >>> pass_at_k(4, 1, 2)
    0.5
    """
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise TypeError(f"pass_at_k: {name} must be an int, got {value!r}")
    if n < 1 or not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(
            f"pass_at_k needs n >= 1, 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}: "
            "draw at least k samples per problem"
        )
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


# ----------------------------------------------------------------------------------------------
# JSONL files
# ----------------------------------------------------------------------------------------------

_QUESTION_FIELDS = ("question", "prompt", "problem")
_ANSWER_FIELDS = ("answer", "final_answer", "solution")


def _reference(field: str, value: Any) -> str | None:
    text = str(value).strip()
    if field == "final_answer":
        return text or None
    if "####" in text or "\\boxed" in text:
        return extract_answer(text)
    return text if field == "answer" and text else None


def _read_jsonl(path: Path, template: str, id_offset: int) -> list[Example]:
    if not path.is_file():
        raise FileNotFoundError(f"task file {str(path)!r} does not exist: check the path")
    examples: list[Example] = []
    with path.open(encoding="utf-8") as fh:
        for index, line in enumerate(fh):
            where = f"{path}, line {index + 1}"
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"{where}: invalid JSON ({exc.msg}): write one JSON object per line"
                ) from exc
            if not isinstance(row, dict):
                raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
            qfield = next((f for f in _QUESTION_FIELDS if f in row), None)
            afield = next((f for f in _ANSWER_FIELDS if f in row), None)
            if qfield is None or afield is None:
                missing = "question" if qfield is None else "answer"
                fields = _QUESTION_FIELDS if qfield is None else _ANSWER_FIELDS
                raise ValueError(
                    f"{where}: no {missing} field (fields present: {sorted(row)}): "
                    f"add one of {', '.join(fields)}"
                )
            answer = _reference(afield, row[afield])
            if not answer:
                raise ValueError(
                    f"{where}: cannot read a final answer from {afield!r}: end the solution "
                    "with '#### <answer>' or put the answer in \\boxed{...}"
                )
            try:
                prompt = template.format_map({**row, "question": row[qfield]})
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(
                    f"{where}: template {template!r} cannot be filled ({exc!r}); placeholders "
                    f"may name {{question}} or the row's fields {sorted(row)}"
                ) from exc
            level_match = re.search(r"\d+", str(row.get("level", "")))
            level = int(level_match.group()) if level_match else 0
            examples.append(Example(id_offset + index, prompt, answer, level))
    if not examples:
        raise ValueError(f"task file {str(path)!r} is empty: add one JSON object per line")
    return examples


def jsonl_task(
    path: str | Path,
    *,
    test_path: str | Path | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    template: str = "{question}",
    reward_funcs: RewardFunc | Sequence[RewardFunc] | None = None,
) -> Task:
    r"""A task from a JSONL file of GSM8K/MATH-style problems.

    Each line is a JSON object. The question is read from ``question``, ``prompt`` or
    ``problem``; the reference from ``answer`` (GSM8K's ``"... #### 42"`` gives ``"42"``, a
    ``\boxed{}`` its content, anything else is taken whole), ``final_answer`` (whole) or
    ``solution`` (its ``\boxed{}`` or ``####`` answer). A ``level`` field (``3`` or
    ``"Level 3"``) sets the level. ``template`` formats the prompt from ``{question}`` and the
    row's other fields. Ids are line indices (0-based); with ``test_path`` the test ids are
    offset by 1,000,000, otherwise a seeded ``test_fraction`` of the lines is held out. Scored by
    ``answers_match(extract_answer(completion), example.answer)`` unless ``reward_funcs`` are
    given.
    """
    path = Path(path)
    rows = _read_jsonl(path, template, 0)
    if test_path is not None:
        train, test = rows, _read_jsonl(Path(test_path), template, TEST_ID_OFFSET)
    else:
        if not 0.0 <= test_fraction < 1.0:
            raise ValueError(
                f"test_fraction={test_fraction} is outside [0, 1): hold out a fraction such as 0.2"
            )
        num_test = round(len(rows) * test_fraction)
        if test_fraction > 0 and len(rows) > 1:
            num_test = min(max(num_test, 1), len(rows) - 1)
        perm = np.random.default_rng(seed).permutation(len(rows))
        test_idx = set(perm[:num_test].tolist())
        train = [ex for i, ex in enumerate(rows) if i not in test_idx]
        test = [ex for i, ex in enumerate(rows) if i in test_idx]
    return Task(
        f"jsonl:{path.name}",
        train,
        test,
        verifier=_math_verifier,
        reward_funcs=reward_funcs,
        reward_source="answers_match(extract_answer(completion))",
    )


def _math_verifier(completion: str, example: Example) -> float:
    return 1.0 if answers_match(extract_answer(completion), example.answer) else 0.0


# ----------------------------------------------------------------------------------------------
# Registry
# ----------------------------------------------------------------------------------------------

SAMPLE_PATH = Path(__file__).with_name("data") / "sample_math.jsonl"
TASKS = ("arithmetic", "jsonl", "sample")


def make_task(spec: str, *, seed: int = 0, **kwargs: Any) -> Task:
    """Build a task by name: ``arithmetic``, ``jsonl:PATH`` (or ``jsonl`` + ``path=``), ``sample``.

    Keyword arguments go to :func:`arithmetic_task` or :func:`jsonl_task`. ``sample`` is the
    dozen word problems shipped in ``trainers/data/sample_math.jsonl``.

    >>> make_task("arithmetic", seed=1, num_train=16, num_test=8).name
    'arithmetic'
    """
    name, _, arg = spec.partition(":")
    if name == "arithmetic" and not arg:
        return arithmetic_task(seed=seed, **kwargs)
    if name == "jsonl":
        if arg and "path" in kwargs:
            raise ValueError(f"task {spec!r} names a path and path= is also given: pass one")
        path = arg or kwargs.pop("path", None)
        if not path:
            raise ValueError("task 'jsonl' needs a file: write 'jsonl:PATH' or pass path=")
        return jsonl_task(path, seed=seed, **kwargs)
    if name == "sample" and not arg:
        task = jsonl_task(SAMPLE_PATH, seed=seed, **kwargs)
        task.name = "sample"
        return task
    guess = difflib.get_close_matches(name, TASKS, n=1, cutoff=0.5)
    hint = f" Did you mean {guess[0]!r}?" if guess else ""
    raise ValueError(
        f"unknown task {spec!r}.{hint} Known: {', '.join(TASKS)} (write 'jsonl:PATH' for a file)."
    )
