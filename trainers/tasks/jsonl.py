"""``jsonl``: GSM8K/MATH-style local files (``question``/``answer`` or ``problem``/``solution``),
scored by :func:`~trainers.tasks.answers.answers_match` on
:func:`~trainers.tasks.answers.extract_answer`."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trainers.models.paths import MissingPathError
from trainers.tasks.answers import answers_match, extract_answer, require_math_verify
from trainers.tasks.base import TEST_ID_OFFSET, Example, RewardFunc, Task, parse_options

_QUESTION_FIELDS = ("question", "prompt", "problem")
_ANSWER_FIELDS = ("answer", "final_answer", "solution")
_SCALARS = (str, int, float, bool)


def _reference(field: str, value: Any, named: bool = False) -> str | None:
    text = str(value).strip()
    if field == "final_answer" and not named:
        return text or None
    if "####" in text or "\\boxed" in text:
        return extract_answer(text)
    return text if (named or field == "answer") and text else None


@dataclass(frozen=True)
class Columns:
    """Which columns of a jsonl file hold what (None: found by name, as documented in
    :func:`jsonl_task`)."""

    question: str | None = None
    answer: str | None = None
    group: str | None = None


#: the options a ``jsonl:PATH?key=value&...`` spec takes (keyword arguments of jsonl_task)
JSONL_OPTIONS = ("question", "answer", "group", "test_fraction", "math_verify")


def _read_rows(path: Path) -> list[tuple[int, str, dict[str, Any]]]:
    """(line index, where, object) of each non-blank line."""
    if path.is_dir():
        raise ValueError(
            f"task file {str(path)!r} is a directory: name a JSON-lines file (jsonl:PATH)"
        )
    if not path.is_file():
        raise MissingPathError(
            f"task file {str(path)!r} does not exist: check the path (jsonl:PATH takes a local "
            "JSON-lines file, one object per line; nothing is downloaded)"
        )
    rows: list[tuple[int, str, dict[str, Any]]] = []
    # bytes.splitlines splits as text mode's universal newlines do (\n, \r\n, \r), and a
    # line that is not UTF-8 can be named
    for index, raw in enumerate(path.read_bytes().splitlines()):
        where = f"{path}, line {index + 1}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{where}: not UTF-8 ({exc.reason} at byte {exc.start}): save the file as UTF-8"
            ) from exc
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
        rows.append((index, where, row))
    if not rows:
        raise ValueError(f"task file {str(path)!r} is empty: add one JSON object per line")
    return rows


def _natural_key(value: Any) -> tuple[Any, ...]:
    """Sort key that orders the digits in text by number: ``Level 2`` before ``Level 10``."""
    parts = re.split(r"(\d+)", str(value))
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


def _read_jsonl(
    path: Path, template: str, id_offset: int, columns: Columns = Columns()
) -> list[Example]:
    rows = _read_rows(path)
    present = list(dict.fromkeys(k for _, _, row in rows for k in row))
    for role in ("question", "answer", "group"):
        name = getattr(columns, role)
        lacking = [where for _, where, row in rows if name is not None and name not in row]
        if lacking:
            raise ValueError(
                f"{lacking[0]}: no column {name!r} (the {role} column; {len(lacking)} of "
                f"{len(rows)} rows lack it); the file's columns: {', '.join(present)}: "
                f"name one of them with {role}="
            )
    examples: list[Example] = []
    for index, where, row in rows:
        qfield = columns.question or next((f for f in _QUESTION_FIELDS if f in row), None)
        afield = columns.answer or next((f for f in _ANSWER_FIELDS if f in row), None)
        if qfield is None or afield is None:
            missing = "question" if qfield is None else "answer"
            fields = _QUESTION_FIELDS if qfield is None else _ANSWER_FIELDS
            raise ValueError(
                f"{where}: no {missing} field (fields present: {sorted(row)}): "
                f"add one of {', '.join(fields)}, or name the column with {missing}="
            )
        if columns.group is not None and (
            columns.group in (qfield, afield) or not isinstance(row[columns.group], _SCALARS)
        ):
            raise ValueError(
                f"{where}: the group column {columns.group!r} holds "
                f"{type(row[columns.group]).__name__} {row[columns.group]!r}: name a column of "
                "text or numbers other than the question and answer"
            )
        answer = _reference(afield, row[afield], named=columns.answer is not None)
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
        row_columns = {
            k: v for k, v in row.items() if k not in (qfield, afield) and isinstance(v, _SCALARS)
        }
        examples.append(Example(id_offset + index, prompt, answer, level, row_columns))
    return examples


def _group_levels(splits: list[list[Example]], rows: list[list[Any]]) -> list[list[Example]]:
    """Each example's level set to the rank of its group value over all splits."""
    ranks = {v: i for i, v in enumerate(sorted({v for r in rows for v in r}, key=_natural_key))}
    return [
        [dataclasses.replace(ex, level=ranks[v]) for ex, v in zip(split, r, strict=True)]
        for split, r in zip(splits, rows, strict=True)
    ]


def parse_jsonl_spec(arg: str) -> tuple[str, dict[str, Any]]:
    """``"data.jsonl?question=problem&group=subject"`` -> the path and :func:`jsonl_task`'s
    keyword arguments (the path ends at the last ``?`` followed by ``key=value`` pairs)."""
    path, sep, query = arg.rpartition("?")
    if not sep or "=" not in query:
        return arg, {}
    options: dict[str, Any] = {}
    for key, value in parse_options(query):
        if key not in JSONL_OPTIONS:
            raise ValueError(
                f"task 'jsonl:{arg}': unknown option {key!r}: the options are "
                f"{', '.join(JSONL_OPTIONS)} (e.g. jsonl:data.jsonl?question=problem&answer="
                "solution&group=subject)"
            )
        if key in options:
            raise ValueError(f"task 'jsonl:{arg}' sets {key!r} twice: give each option once")
        if key == "test_fraction":
            try:
                options[key] = float(value)
            except ValueError:
                raise ValueError(
                    f"task 'jsonl:{arg}': test_fraction={value!r} is not a number"
                ) from None
        elif key == "math_verify":
            if value.lower() not in ("true", "false", "auto"):
                raise ValueError(
                    f"task 'jsonl:{arg}': math_verify={value!r}: write true, false or auto"
                )
            options[key] = {"true": True, "false": False}.get(value.lower())
        elif not value:
            raise ValueError(f"task 'jsonl:{arg}': {key}= names no column")
        else:
            options[key] = value
    return path, options


def jsonl_task(
    path: str | Path,
    *,
    test_path: str | Path | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    template: str = "{question}",
    reward_funcs: RewardFunc | Sequence[RewardFunc] | None = None,
    question: str | None = None,
    answer: str | None = None,
    group: str | None = None,
    math_verify: bool | None = None,
) -> Task:
    r"""A task from a JSONL file of GSM8K/MATH-style problems.

    Each line is a JSON object. The question is read from ``question``, ``prompt`` or
    ``problem``; the reference from ``answer`` (GSM8K's ``"... #### 42"`` gives ``"42"``, a
    ``\boxed{}`` its content, anything else is taken whole), ``final_answer`` (whole) or
    ``solution`` (its ``\boxed{}`` or ``####`` answer). ``question=`` and ``answer=`` name
    other columns (every row must have them; an answer column is read as ``answer`` is). A
    ``level`` field (``3`` or ``"Level 3"``) sets the level; ``group=`` names a column whose
    distinct values become the levels instead, numbered 0, 1, ... in natural order over train
    and test together (``Level 2`` before ``Level 10``, subjects alphabetically), so that
    per-level evaluation and ``--belief-group level`` (``auto`` under a fitted prior) group by
    it. ``template`` formats the prompt from ``{question}`` and the row's other fields. Ids are
    line indices (0-based); with ``test_path`` the test ids are offset by 1,000,000, otherwise
    a seeded ``test_fraction`` of the lines is held out. Scored by
    ``answers_match(extract_answer(completion), example.answer, symbolic=math_verify)`` (None:
    math-verify's symbolic check when the ``math`` extra is installed; True: required; False:
    numbers and text only) unless ``reward_funcs`` are given. ``make_task`` takes the same
    options in the spec: ``jsonl:PATH?question=problem&answer=solution&group=subject``.
    """
    if math_verify is True:
        require_math_verify()
    if math_verify not in (None, True, False):
        raise ValueError(f"math_verify must be True, False or None, got {math_verify!r}")
    path = Path(path)
    columns = Columns(question, answer, group)
    rows = _read_jsonl(path, template, 0, columns)
    if test_path is not None:
        train, test = rows, _read_jsonl(Path(test_path), template, TEST_ID_OFFSET, columns)
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
    if group is not None:
        train, test = _group_levels(
            [train, test], [[ex.columns[group] for ex in s] for s in (train, test)]
        )

    def verify(completion: str, example: Example) -> float:
        matched = answers_match(extract_answer(completion), example.answer, symbolic=math_verify)
        return 1.0 if matched else 0.0

    how = {None: "", True: ", symbolic=True", False: ", symbolic=False"}[math_verify]
    return Task(
        f"jsonl:{path.name}",
        train,
        test,
        verifier=verify,
        reward_funcs=reward_funcs,
        reward_source=f"answers_match(extract_answer(completion){how})",
    )
