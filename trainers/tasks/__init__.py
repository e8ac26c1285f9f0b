"""Tasks for the GRPO trainer: prompts, reference answers and a verifier that scores completions.

A :class:`Task` holds a ``train`` and a ``test`` list of :class:`Example` (and a ``validation``
list, empty unless the task generates one) and scores completions with either a
:data:`Verifier` ``(completion, example) -> reward`` or TRL-style reward functions
``f(prompts, completions, completion_ids=..., **columns) -> list[float | None]``. Built-in tasks:

- ``arithmetic`` — synthetic expressions such as ``"37+5="`` on a graded ladder of difficulty
  levels, scored by exact match; trains a tiny model on CPU in minutes.
- ``jsonl`` — GSM8K/MATH-style local files (``question``/``answer`` or ``problem``/``solution``,
  or columns named in the spec: ``jsonl:PATH?question=problem&answer=solution&group=subject``),
  scored by :func:`answers_match` on :func:`extract_answer` (math-verify when installed).
- ``rg:<dataset>`` — reasoning-gym's procedural datasets (``rg:chain_sum``,
  ``rg:spell_backward?min_word_len=3&max_word_len=7``), generated locally with disjoint train,
  validation and test splits, scored by each dataset's own ``score_answer`` (the ``rg`` extra).
- ``sample`` — a dozen word problems shipped with the package, for smoke tests.

Held-out evaluation reports pass@1 and pass@k through :func:`pass_at_k`. Only the standard library
and numpy are imported here; ``math_verify`` and ``reasoning_gym`` are imported when used.

Modules: ``base`` (``Example``, ``Task``, scoring), ``arithmetic``, ``answers`` (extraction,
matching, pass@k), ``jsonl`` (files), ``reasoning_gym`` (``rg:`` tasks; import it from there) and
``registry`` (``make_task``); every other name is importable from ``trainers.tasks`` itself.
"""

from __future__ import annotations

from trainers.tasks.answers import answers_match, extract_answer, pass_at_k
from trainers.tasks.arithmetic import (
    ARITHMETIC_LEVELS,
    ArithmeticPool,
    arithmetic_task,
    exact_match,
)
from trainers.tasks.base import (
    TEST_ID_OFFSET,
    VALIDATION_ID_OFFSET,
    Example,
    MissingExtraError,
    RewardFunc,
    Scores,
    Task,
    Verifier,
)
from trainers.tasks.jsonl import jsonl_task
from trainers.tasks.registry import SAMPLE_PATH, TASKS, make_task

__all__ = [
    "ARITHMETIC_LEVELS",
    "SAMPLE_PATH",
    "TASKS",
    "TEST_ID_OFFSET",
    "VALIDATION_ID_OFFSET",
    "ArithmeticPool",
    "Example",
    "MissingExtraError",
    "RewardFunc",
    "Scores",
    "Task",
    "Verifier",
    "answers_match",
    "arithmetic_task",
    "exact_match",
    "extract_answer",
    "jsonl_task",
    "make_task",
    "pass_at_k",
]
