r"""Final answers: extraction (``\boxed{}``, GSM8K's ``####``, the last number), matching
(numeric, normalised text, math-verify's symbolic check when installed) and the unbiased pass@k
estimator."""

from __future__ import annotations

import functools
import math
import re
import threading
from fractions import Fraction
from typing import Any

import numpy as np

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


def require_math_verify() -> None:
    """Raise :class:`~trainers.tasks.base.MissingExtraError` naming the ``math`` extra when
    ``math_verify`` is not installed."""
    if _math_verify() is None:
        from trainers.tasks.base import MissingExtraError

        raise MissingExtraError(
            "symbolic answer matching needs math-verify, the 'math' extra, which is not "
            'installed: pip install -e ".[math]" (or leave math_verify unset to match numbers '
            "and text only)"
        )


def _symbolic_match(math_verify: Any, predicted: str, reference: str) -> bool:
    """math-verify's verdict; its timeouts use ``signal.alarm``, which only the main thread may
    set, so other threads (a TRL reward worker) run it without them."""
    timeout = 5 if threading.current_thread() is threading.main_thread() else None
    try:
        gold = math_verify.parse(f"${reference}$", parsing_timeout=timeout)
        target = math_verify.parse(f"${predicted}$", parsing_timeout=timeout)
        return bool(math_verify.verify(gold, target, timeout_seconds=timeout))
    except Exception:
        return False


def answers_match(predicted: str | None, reference: str, *, symbolic: bool | None = None) -> bool:
    r"""Whether a predicted answer equals the reference.

    Numeric equality after normalising (``$``, commas, whitespace, a trailing ``.``, ``42.0``,
    fractions ``3/4`` and ``\frac{3}{4}``), else string equality of the normalised forms; when
    those say no, math-verify's symbolic check (``\sqrt{8}`` = ``2\sqrt{2}``, ``x=5`` = ``5``,
    ``50\%`` = ``0.5``) is tried too: with ``symbolic=None`` when ``math_verify`` is installed,
    with ``True`` always (a missing package is an error), with ``False`` never. None never
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
    if symbolic is False:
        return False
    if symbolic:
        require_math_verify()
    math_verify = _math_verify()
    return math_verify is not None and _symbolic_match(math_verify, predicted, reference)


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
