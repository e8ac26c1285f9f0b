"""``rg:<dataset>``: reasoning-gym's procedural datasets as tasks, scored by each dataset's own
``score_answer``.

reasoning-gym (the ``rg`` extra) generates its items locally from a seed, so a task is built from
nothing but its spec: ``rg:spell_backward?min_word_len=3&max_word_len=7&threshold=0.5``. The
query sets the dataset's own config fields (parsed to the field's type, refused with the allowed
fields when unknown) and the task's options :data:`TASK_OPTIONS`. reasoning-gym is imported only
when such a task is built, so ``trainers.tasks`` stays light.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import types
import typing
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from trainers.tasks.base import (
    TEST_ID_OFFSET,
    VALIDATION_ID_OFFSET,
    Example,
    MissingExtraError,
    Task,
    parse_options,
)

#: the task's own options, beside the dataset's config fields
TASK_OPTIONS = ("threshold", "num_train", "num_validation", "num_test", "level")
#: config fields the task sets itself (per split), never the user
_TASK_SET_FIELDS = ("seed", "size")
#: a difficulty key with more distinct values than this is cut into this many quantile bins
_MAX_STEPS = 16
#: fresh reasoning-gym seeds tried per split before too few distinct questions is an error
_ATTEMPTS = 4
#: where an item's difficulty value lives when its metadata does not use the difficulty's name
#: (``metadata["difficulty"]`` records ``{"words": (5, 15)}``, the item ``span_length``)
_LEVEL_ALIASES: dict[str, dict[str, str]] = {"letter_counting": {"words": "span_length"}}
#: characters outside printable ASCII that have a plain spelling
_ASCII_SPELLING = {
    "\t": " ",
    "\r": "\n",
    "\u00a0": " ",
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u2013": "-",
    "\u2014": "-",
    "\u2212": "-",
    "\u00d7": "*",
    "\u00b7": "*",
    "\u00f7": "/",
    "\u2026": "...",
    "\u2264": "<=",
    "\u2265": ">=",
    "\u2260": "!=",
    "\u2192": "->",
}
_INSTALL_HINT = 'pip install -e ".[rg]"'


@functools.cache
def _reasoning_gym() -> Any:
    try:
        import reasoning_gym
    except ImportError as exc:
        raise MissingExtraError(
            f"rg: tasks need reasoning-gym, the 'rg' extra, which is not installed: {_INSTALL_HINT}"
        ) from exc
    return reasoning_gym


def rg_datasets() -> list[str]:
    """The names reasoning-gym registers, sorted (what ``rg:<dataset>`` accepts)."""
    return sorted(_registry())


def _registry() -> Mapping[str, tuple[type, type]]:
    _reasoning_gym()
    from reasoning_gym.factory import DATASETS

    return typing.cast("Mapping[str, tuple[type, type]]", DATASETS)


def to_printable_ascii(text: str) -> str:
    r"""``text`` in the characters the tiny tokenizer knows (printable ASCII and newline).

    Tabs and non-breaking spaces become spaces, ``\r\n`` and ``\r`` newlines, curly quotes,
    dashes, ``×``, ``÷``, ``…``, ``≤``, ``≥``, ``≠`` and ``→`` their ASCII spellings, accented
    letters lose their accents (``é`` -> ``e``); any other character becomes ``?``.

    >>> to_printable_ascii("caf\u00e9 \u2014 3\u00d74\u2026")
    'cafe - 3*4...'
    """
    text = text.replace("\r\n", "\n")
    out: list[str] = []
    for ch in text:
        if ch == "\n" or " " <= ch <= "~":
            out.append(ch)
        elif ch in _ASCII_SPELLING:
            out.append(_ASCII_SPELLING[ch])
        else:
            bare = "".join(
                c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c)
            )
            out.append(bare if bare and all(" " <= c <= "~" for c in bare) else "?")
    return "".join(out)


# --- the spec: config fields and task options -------------------------------------------------
def _field_types(config_cls: type) -> dict[str, Any]:
    fields = {f.name: f.type for f in dataclasses.fields(config_cls)}
    try:
        hints = typing.get_type_hints(config_cls)
    except Exception:  # a forward reference reasoning-gym cannot resolve: take the raw types
        hints = {}
    return {name: hints.get(name, tp) for name, tp in fields.items()}


_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def _parse(text: str, tp: Any, where: str) -> Any:
    """``text`` read as a value of type ``tp`` (bool, int, float, str, Literal, Optional, lists
    and tuples of those, comma-separated)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if type(None) in args and text.strip().lower() in ("none", "null"):
            return None
        rest = [a for a in args if a is not type(None)]
        errors = []
        for option in rest:
            try:
                return _parse(text, option, where)
            except ValueError as exc:
                errors.append(str(exc))
        raise ValueError(errors[0] if errors else f"{where}: cannot read {text!r}")
    if origin is Literal:
        for choice in args:
            if str(choice) == text:
                return choice
        raise ValueError(f"{where} is {text!r}: choose one of {', '.join(map(str, args))}")
    if origin in (list, tuple, Sequence) or tp in (list, tuple):
        items = [t.strip() for t in text.split(",")] if text.strip() else []
        element = args[0] if args and args[0] is not Ellipsis else str
        values = [_parse(t, element, where) for t in items]
        return tuple(values) if origin is tuple or tp is tuple else values
    if tp is bool:
        low = text.strip().lower()
        if low in _TRUE or low in _FALSE:
            return low in _TRUE
        raise ValueError(f"{where} is {text!r}: write true or false")
    if tp in (int, float):
        try:
            return tp(text)
        except ValueError:
            raise ValueError(f"{where} is {text!r}: write a number ({tp.__name__})") from None
    if tp is str or tp is Any:
        return text
    raise ValueError(
        f"{where} has type {tp} that a task spec cannot write: pass it as a keyword argument "
        "of make_task instead"
    )


def parse_rg_spec(arg: str) -> tuple[str, dict[str, str]]:
    """``"chain_sum?min_terms=2&threshold=0.5"`` -> ``("chain_sum", {"min_terms": "2", ...})``;
    a key given twice is an error."""
    dataset, _, query = arg.partition("?")
    options: dict[str, str] = {}
    for key, value in parse_options(query):
        if key in options:
            raise ValueError(f"task 'rg:{arg}' sets {key!r} twice: give each option once")
        options[key] = value
    return dataset.strip(), options


def _dataset_classes(dataset: str) -> tuple[type, type]:
    registry = _registry()
    if dataset not in registry:
        near = difflib.get_close_matches(dataset, list(registry), n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(map(repr, near))}?" if near else ""
        raise ValueError(
            f"unknown reasoning-gym dataset {dataset!r}.{hint} "
            f"trainers.tasks.reasoning_gym.rg_datasets() lists all {len(registry)}."
        )
    return registry[dataset]


def _check_config(dataset: str, config_cls: type, config: dict[str, Any]) -> dict[str, Any]:
    """Refuse unknown or task-set fields, naming the allowed ones."""
    types_ = _field_types(config_cls)
    allowed = [f for f in types_ if f not in _TASK_SET_FIELDS]
    for key in config:
        if key in _TASK_SET_FIELDS:
            fix = "seed= of make_task (--task-seed)" if key == "seed" else "num_train= etc."
            raise ValueError(
                f"rg:{dataset}: {key!r} is set by the task for each split: use {fix} instead"
            )
        if key not in types_:
            near = difflib.get_close_matches(key, allowed + list(TASK_OPTIONS), n=1, cutoff=0.6)
            hint = f" Did you mean {near[0]!r}?" if near else ""
            raise ValueError(
                f"rg:{dataset} has no option {key!r}.{hint} Config fields of {dataset}: "
                f"{', '.join(allowed) or 'none'}; task options: {', '.join(TASK_OPTIONS)}"
            )
    return types_


# --- items, levels and splits -----------------------------------------------------------------
def _level_source(dataset: str, key: str, metadata: Mapping[str, Any]) -> str | None:
    """The metadata key holding an item's value of difficulty parameter ``key``."""
    alias = _LEVEL_ALIASES.get(dataset, {}).get(key)
    for name in (alias, key, f"num_{key}"):
        if name is not None and _is_number(metadata.get(name)):
            return name
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _level_keys(
    dataset: str, metas: Sequence[Mapping[str, Any]], level: Sequence[str] | None
) -> list[str]:
    """The metadata keys that set the level: ``level`` when given (checked), else the keys of
    ``metadata["difficulty"]`` an item records a number for (through ``_level_source``)."""
    if level is not None:
        keys = [k for k in level if k != "none"]
        for key in keys:
            lacking = sum(not _is_number(m.get(key)) for m in metas)
            if lacking:
                numeric = sorted({k for m in metas for k, v in m.items() if _is_number(v)})
                raise ValueError(
                    f"rg:{dataset}: level key {key!r} is not a number in {lacking} of "
                    f"{len(metas)} items; numeric metadata keys: {', '.join(numeric) or 'none'} "
                    "(or level=none)"
                )
        return keys
    keys = []
    for key in metas[0].get("difficulty") or {}:
        sources = {_level_source(dataset, key, m) for m in metas}
        if len(sources) == 1 and None not in sources:
            (source,) = sources
            if source is not None and source not in keys:
                keys.append(source)
    return keys


def _ranks(values: np.ndarray) -> np.ndarray:
    """0-based ranks of ``values`` (float [n]) in increasing order: one per distinct value, or
    ``_MAX_STEPS`` quantile bins when there are more distinct values than that."""
    distinct = np.unique(values)
    if distinct.size <= _MAX_STEPS:
        return np.searchsorted(distinct, values)  # [n]
    edges = np.unique(np.quantile(values, np.linspace(0, 1, _MAX_STEPS + 1)[1:-1]))
    bins = np.searchsorted(edges, values, side="right")  # [n]
    return np.unique(bins, return_inverse=True)[1]


def _levels(metas: Sequence[Mapping[str, Any]], keys: list[str]) -> list[int]:
    """Each item's level: the sum over ``keys`` of its rank on that key, renumbered 0..L-1."""
    if not keys or not metas:
        return [0] * len(metas)
    total = np.zeros(len(metas), dtype=np.int64)  # [n]
    for key in keys:
        total += _ranks(np.array([float(m[key]) for m in metas]))
    return [int(v) for v in np.unique(total, return_inverse=True)[1]]


def _columns(metadata: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, (bool, int, float, str)):
            out[key] = value
        elif isinstance(value, (np.integer, np.floating, np.bool_)):
            out[key] = value.item()
    return out


def _split_seed(seed: int, split: int, attempt: int) -> int:
    """A reasoning-gym seed per (task seed, split, attempt), far apart: its datasets seed item i
    with ``seed + i``, so neighbouring seeds would share most items."""
    return int(np.random.SeedSequence([seed, split, attempt]).generate_state(1)[0])


def _draw(
    make: Callable[[int, int], Any],
    need: int,
    split: int,
    seed: int,
    seen: set[str],
    where: str,
) -> list[tuple[Any, dict[str, Any], str]]:
    """``need`` items (dataset, entry, prompt) whose prompts are not in ``seen`` (added)."""
    got: list[tuple[Any, dict[str, Any], str]] = []
    drawn = 0
    for attempt in range(_ATTEMPTS):
        if len(got) == need:
            break
        size = max(2 * (need - len(got)), 64)
        ds = make(_split_seed(seed, split, attempt), size)
        for i in range(size):
            try:
                entry = ds[i]
            except IndexError:  # datasets with a fixed pool of items
                break
            drawn += 1
            prompt = to_printable_ascii(str(entry["question"]))
            if prompt in seen:
                continue
            seen.add(prompt)
            got.append((ds, entry, prompt))
            if len(got) == need:
                break
    if len(got) < need:
        raise ValueError(
            f"{where}: only {len(got)} distinct new questions in {drawn} drawn, {need} wanted: "
            "ask for fewer (num_train, num_validation, num_test) or widen the dataset's config"
        )
    return got


# --- the task ---------------------------------------------------------------------------------
def _check_count(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def reasoning_gym_task(
    dataset: str,
    *,
    seed: int = 0,
    num_train: int = 2000,
    num_validation: int = 200,
    num_test: int = 400,
    threshold: float = 1.0,
    level: str | Sequence[str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> Task:
    """A task of reasoning-gym's ``dataset``, generated locally and scored by its own
    ``score_answer``.

    **Options.** ``config`` holds the dataset's own config fields (``{"min_word_len": 3}``);
    its ``seed`` and ``size`` are the task's to set. ``threshold`` is the score that counts as a
    success: the reward is 1.0 when ``score_answer(completion, entry) >= threshold``, else 0.0
    (the trainer counts a reward >= 0.5 as a success, so partial scores are not passed on).

    **Splits.** Test, then validation, then train are drawn from their own reasoning-gym seeds
    (derived from ``seed``), each question kept once over all three: no question of one split
    is in another, and the test split does not change with ``num_train``. Ids: train 0..n-1,
    test from ``TEST_ID_OFFSET``, validation from ``VALIDATION_ID_OFFSET``.

    **Prompts and answers.** The prompt is the dataset's question, the answer its reference
    (empty for datasets that accept many answers and record none), both mapped to printable
    ASCII and newline by :func:`to_printable_ascii` (the tiny model's characters): other
    characters lose accents or become ``?``. ``score_answer`` gets the completion stripped of
    surrounding whitespace, not an ``<answer>`` tag's content: the small models here emit the
    answer right after the prompt. It scores against the original (unmapped) item.

    **Levels.** ``level`` names the item metadata keys that set the level (a list, or a
    comma-separated string; ``"none"``: all 0). By default they are the difficulty parameters
    reasoning-gym lists in ``metadata["difficulty"]`` for which the item records its own number
    (under the same name, ``num_<name>``, or a known alias such as letter_counting's
    ``span_length``). An item's level is the sum of its ranks on those keys (a key with more
    than 16 distinct values is cut in 16 quantile bins), renumbered 0, 1, ... in increasing
    difficulty. Every scalar metadata value (``num_terms``, ``word``, ``source_dataset``) is
    copied into the example's ``columns`` for ``--belief-group``.

    >>> task = reasoning_gym_task("spell_backward", num_train=8, num_validation=2, num_test=4)
    >>> task.score(task.test[:1], [task.test[0].answer]).rewards.tolist()
    [1.0]
    """
    rg = _reasoning_gym()
    config = dict(config or {})
    dataset_cls, config_cls = _dataset_classes(dataset)
    del dataset_cls  # built through rg.create_dataset, the public way
    _check_config(dataset, config_cls, config)
    num_train = _check_count("num_train", num_train, 1)
    num_validation = _check_count("num_validation", num_validation, 0)
    num_test = _check_count("num_test", num_test, 0)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise ValueError(f"threshold must be a number in (0, 1], got {threshold!r}")
    if not 0.0 < threshold <= 1.0:
        raise ValueError(
            f"threshold={threshold} is outside (0, 1]: a success is score_answer >= threshold "
            "(1.0: fully correct)"
        )
    level_keys = [k.strip() for k in level.split(",")] if isinstance(level, str) else level
    name = f"rg:{dataset}"

    def make(rg_seed: int, size: int) -> Any:
        try:
            return rg.create_dataset(dataset, **config, seed=rg_seed, size=size)
        except (AssertionError, ValueError, TypeError) as exc:
            raise ValueError(
                f"{name}: reasoning-gym refuses the config {config}: {exc or type(exc).__name__}"
            ) from exc

    seen: set[str] = set()
    drawn = {
        split: _draw(make, count, index, seed, seen, f"{name}, {split} split")
        for index, (split, count) in enumerate(
            (("test", num_test), ("validation", num_validation), ("train", num_train))
        )
    }
    everything = [item for split in ("train", "validation", "test") for item in drawn[split]]
    metas = [dict(entry.get("metadata") or {}) for _, entry, _ in everything]
    keys = _level_keys(dataset, metas, level_keys)
    levels = iter(_levels(metas, keys))
    offsets = {"train": 0, "validation": VALIDATION_ID_OFFSET, "test": TEST_ID_OFFSET}
    splits: dict[str, list[Example]] = {}
    sources: dict[int, tuple[Any, dict[str, Any]]] = {}
    for split in ("train", "validation", "test"):
        rows = []
        for i, (ds, entry, prompt) in enumerate(drawn[split]):
            answer = entry.get("answer")
            answer_text = "" if answer is None else to_printable_ascii(str(answer))
            meta = entry.get("metadata") or {}
            example = Example(offsets[split] + i, prompt, answer_text, next(levels), _columns(meta))
            sources[example.id] = (ds, entry)
            rows.append(example)
        splits[split] = rows

    def verify(completion: str, example: Example) -> float:
        ds, entry = sources[example.id]
        score = ds.score_answer(completion.strip(), entry)
        return 1.0 if score is not None and float(score) >= threshold else 0.0

    options = {(f"config.{k}" if k in TASK_OPTIONS else k): v for k, v in config.items()}
    if threshold != 1.0:
        options["threshold"] = threshold
    if level is not None:
        options["level"] = ",".join(level_keys or [])
    query = "&".join(f"{k}={_spell(v)}" for k, v in options.items())
    task_name = f"{name}?{query}" if query else name
    verify.__name__ = f"{dataset}_score_answer"
    return Task(
        task_name,
        splits["train"],
        splits["test"],
        validation=splits["validation"],
        verifier=verify,
        reward_source=f"reasoning-gym {dataset}.score_answer(completion.strip()) >= {threshold}",
        details={
            "source": "reasoning-gym",
            "version": _version(),
            "dataset": dataset,
            "config": {k: list(v) if isinstance(v, tuple) else v for k, v in config.items()},
            "threshold": threshold,
            "level_keys": keys,
        },
    )


def _version() -> str:
    """reasoning-gym's installed release (its ``__version__`` attribute lags behind)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("reasoning-gym")
    except PackageNotFoundError:
        return "unknown"


def _spell(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def make_rg_task(arg: str, *, seed: int = 0, **kwargs: Any) -> Task:
    """The task of ``rg:<arg>``: ``arg`` is ``<dataset>[?key=value&...]``, each key one of
    :data:`TASK_OPTIONS` or a config field of the dataset (``config.<field>`` for a field named
    like a task option, such as arc_1d's ``num_train``); ``kwargs`` are keyword arguments of
    :func:`reasoning_gym_task`, their ``config`` merged with the spec's (a key given both ways is
    an error)."""
    dataset, options = parse_rg_spec(arg)
    if not dataset:
        raise ValueError(
            "task 'rg:' names no dataset: write rg:<dataset>, e.g. rg:chain_sum "
            "(trainers.tasks.reasoning_gym.rg_datasets() lists them)"
        )
    _reasoning_gym()
    _, config_cls = _dataset_classes(dataset)
    task_texts = {k: v for k, v in options.items() if k in TASK_OPTIONS}
    config_texts = {
        k.removeprefix("config."): v for k, v in options.items() if k not in TASK_OPTIONS
    }
    types_ = _check_config(dataset, config_cls, config_texts)
    config = dict(kwargs.pop("config", None) or {})
    both = sorted((set(task_texts) & set(kwargs)) | (set(config_texts) & set(config)))
    if both:
        raise ValueError(f"task 'rg:{arg}' sets {both} and so do keyword arguments: pass one")
    where = f"rg:{dataset} option"
    for key, text in config_texts.items():
        config[key] = _parse(text, types_[key], f"{where} {key}")
    task_options: dict[str, Any] = {}
    for key, text in task_texts.items():
        if key == "threshold":
            task_options[key] = _parse(text, float, f"{where} {key}")
        elif key == "level":
            task_options[key] = text
        else:
            task_options[key] = _parse(text, int, f"{where} {key}")
    return reasoning_gym_task(dataset, seed=seed, config=config, **task_options, **kwargs)
