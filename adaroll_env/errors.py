"""The one home of user-facing error helpers shared by every adaroll package."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable
from typing import Any


def closest(name: str, known: Iterable[str]) -> str | None:
    """Return the known name closest to ``name``, or None if nothing is close."""
    matches = difflib.get_close_matches(name, list(known), n=1, cutoff=0.5)
    return matches[0] if matches else None


def unknown_name(kind: str, name: str, known: Iterable[str], fix: str = "") -> ValueError:
    """Build the ValueError for an unknown registered name, suggesting the closest one."""
    known = sorted(known)
    guess = closest(name, known)
    hint = f" Did you mean {guess!r}?" if guess else ""
    tail = f" {fix}" if fix else ""
    return ValueError(f"unknown {kind} {name!r}.{hint} Known: {', '.join(known)}.{tail}")


def import_object(path: str, kind: str) -> Any:
    """Import ``"package.module:attribute"`` and return the attribute, with clear errors."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(
            f"{kind} path {path!r} is not of the form 'package.module:name': "
            "write the module path, a colon, then the attribute name"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(
            f"cannot import module {module_name!r} named by {kind} {path!r} ({exc}): "
            "check the spelling and that the module is on the Python path"
        ) from exc
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise ValueError(
                f"module {module_name!r} has no attribute {attr!r} (named by {kind} {path!r}): "
                "check the name after the colon"
            ) from exc
    return obj


def check_keywords(owner: str, given: Iterable[str], known: Iterable[str]) -> None:
    """Raise ``TypeError`` for the first keyword of ``given`` that ``owner`` does not take,
    suggesting the closest known one and listing them all (Python's own message names
    neither)."""
    known = list(known)
    for key in given:
        if key not in known:
            guess = closest(key, known)
            hint = f" Did you mean {guess!r}?" if guess else ""
            raise TypeError(
                f"{owner} got an unexpected keyword argument {key!r}.{hint} "
                f"Its arguments: {', '.join(known)}."
            )


def check_int(name: str, value: Any, minimum: int) -> int:
    """Return ``value`` as an ``int`` if it is a whole number of at least ``minimum``.

    The one integer validator of adaroll. A bool, a float (even a whole one) or any other
    non-integer type raises ``TypeError``; an integer below ``minimum`` raises ``ValueError``;
    both messages name the argument, the value and the rule.
    """
    import numpy as np

    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(
            f"{name} must be an integer >= {minimum}, got {value!r} ({type(value).__name__})"
        )
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)
