"""``make_task``: a task by name (``arithmetic``, ``jsonl:PATH``, ``rg:<dataset>``, ``sample``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainers.tasks.arithmetic import arithmetic_task
from trainers.tasks.base import Task
from trainers.tasks.jsonl import jsonl_task, parse_jsonl_spec

SAMPLE_PATH = Path(__file__).parent.parent / "data" / "sample_math.jsonl"
TASKS = ("arithmetic", "jsonl", "rg", "sample")


def make_task(spec: str, *, seed: int = 0, **kwargs: Any) -> Task:
    """Build a task by name: ``arithmetic``, ``jsonl:PATH`` (or ``jsonl`` + ``path=``),
    ``rg:<dataset>``, ``sample``.

    Keyword arguments go to :func:`arithmetic_task`, :func:`jsonl_task` or
    :func:`~trainers.tasks.reasoning_gym.reasoning_gym_task`. ``jsonl:PATH?question=problem``
    and ``rg:chain_sum?min_terms=3&threshold=0.5`` take options after ``?`` (see those
    functions). ``sample`` is the dozen word problems shipped in
    ``trainers/data/sample_math.jsonl``.

    >>> make_task("arithmetic", seed=1, num_train=16, num_test=8).name
    'arithmetic'
    """
    name, _, arg = spec.partition(":")
    if name == "arithmetic" and not arg:
        return arithmetic_task(seed=seed, **kwargs)
    if name == "jsonl":
        if arg and "path" in kwargs:
            raise ValueError(f"task {spec!r} names a path and path= is also given: pass one")
        path, options = parse_jsonl_spec(arg) if arg else (kwargs.pop("path", None), {})
        if not path:
            raise ValueError("task 'jsonl' needs a file: write 'jsonl:PATH' or pass path=")
        both = sorted(set(options) & set(kwargs))
        if both:
            raise ValueError(f"task {spec!r} sets {both} and so do keyword arguments: pass one")
        return jsonl_task(path, seed=seed, **options, **kwargs)
    if name == "rg":
        from trainers.tasks.reasoning_gym import make_rg_task  # reasoning-gym only when used

        return make_rg_task(arg, seed=seed, **kwargs)
    if name == "sample" and not arg:
        task = jsonl_task(SAMPLE_PATH, seed=seed, **kwargs)
        task.name = "sample"
        return task
    from adaroll_env.errors import closest  # only on this error path: trainers.tasks stays light

    guess = closest(name, TASKS)
    hint = f" Did you mean {guess!r}?" if guess else ""
    raise ValueError(
        f"unknown task {spec!r}.{hint} Known: {', '.join(TASKS)} (write 'jsonl:PATH' for a file, "
        "'rg:<dataset>' for reasoning-gym)."
    )
