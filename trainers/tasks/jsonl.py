"""``jsonl``: GSM8K/MATH-style local files (``question``/``answer`` or ``problem``/``solution``),
scored by :func:`~trainers.tasks.answers.answers_match` on
:func:`~trainers.tasks.answers.extract_answer`."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trainers.models.paths import MissingPathError
from trainers.tasks.answers import answers_match, extract_answer
from trainers.tasks.base import TEST_ID_OFFSET, Example, RewardFunc, Task

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
    if path.is_dir():
        raise ValueError(
            f"task file {str(path)!r} is a directory: name a JSON-lines file (jsonl:PATH)"
        )
    if not path.is_file():
        raise MissingPathError(
            f"task file {str(path)!r} does not exist: check the path (jsonl:PATH takes a local "
            "JSON-lines file, one object per line; nothing is downloaded)"
        )
    examples: list[Example] = []
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
        columns = {
            k: v
            for k, v in row.items()
            if k not in (qfield, afield) and isinstance(v, (str, int, float, bool))
        }
        examples.append(Example(id_offset + index, prompt, answer, level, columns))
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
