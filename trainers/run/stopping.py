"""A clean stop on SIGINT (Ctrl-C) or SIGTERM: finish the step, save, say how to resume.

While a run holds ``StopSignals``, the first SIGINT or SIGTERM only asks it to stop: the step in
progress finishes, then the run writes its checkpoint and summary, prints one line saying how to
resume, and raises ``RunInterrupted`` (exit status ``128 + signal``: 130 for SIGINT, 143 for
SIGTERM). A second SIGINT forces the stop at once (``KeyboardInterrupt``), except in competition
workers (``worker_mode``), which may see one signal from the terminal and one forwarded by the
parent. Handlers are only installed from the main thread.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

#: the signals a run stops cleanly on
SIGNALS = (signal.SIGINT, signal.SIGTERM)

_requested: int | None = None
_worker = False
_on_signal: list[Callable[[int], None]] = []


class RunInterrupted(Exception):
    """A run (or competition) stopped by a signal after saving; ``exit_code`` is 128 + signal."""

    def __init__(self, signum: int, message: str) -> None:
        super().__init__(message)
        self.signum = signum
        self.exit_code = 128 + signum


def requested() -> int | None:
    """The signal that asked for a stop, or None."""
    return _requested


def signal_name(signum: int) -> str:
    """``"SIGINT"`` for 2, and so on."""
    return signal.Signals(signum).name


def signal_number(name: str) -> int:
    """``2`` for ``"SIGINT"``, and so on."""
    return int(signal.Signals[name].value)


def clear() -> None:
    """Forget a handled stop request (a worker process keeps it: it must start nothing more)."""
    global _requested
    if not _worker:
        _requested = None


def _handle(signum: int, frame: FrameType | None) -> None:
    global _requested
    if _requested is not None and not _worker and signum == signal.SIGINT:
        raise KeyboardInterrupt(f"second {signal_name(signum)}: stopping now, without saving")
    if _requested is None:
        _requested = signum
        if not _worker:  # os.write: safe inside a signal handler, unlike print
            with contextlib.suppress(OSError):  # a closed standard error stops nothing
                os.write(2, (
                    f"\n{signal_name(signum)}: stopping after the step in progress and saving "
                    "(Ctrl-C again stops at once, without saving)\n"
                ).encode())  # fmt: skip
        for hook in _on_signal:
            hook(signum)


def worker_mode() -> None:
    """Install the handlers for the life of a competition worker process (a pool initializer)."""
    global _worker
    _worker = True
    for s in SIGNALS:
        signal.signal(s, _handle)


class StopSignals:
    """Context manager: SIGINT/SIGTERM set ``requested()`` instead of killing the process;
    ``on_signal(signum)`` runs at the first one (a competition passes it on to its workers)."""

    def __init__(self, on_signal: Callable[[int], None] | None = None) -> None:
        self._previous: dict[int, Any] = {}
        self._hook = on_signal

    def __enter__(self) -> StopSignals:
        if self._hook is not None:
            _on_signal.append(self._hook)
        if threading.current_thread() is threading.main_thread() and not _worker:
            for s in SIGNALS:
                self._previous[s] = signal.signal(s, _handle)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous.clear()
        if self._hook is not None:
            _on_signal.remove(self._hook)
