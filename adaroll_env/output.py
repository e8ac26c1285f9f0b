"""Output is not a lifeline: a closed standard output or error never stops a command.

When the reader of a pipe goes (``adaroll compete … | head -n 1``) or a terminal closes, every
write to that stream fails (``BrokenPipeError``), and a progress bar or a ``print`` that fails
can end a run, or leave a process waiting on a lock forever. Inside ``guarded_output`` the
standard streams are guarded (``GuardedStream``): a write that fails drops that stream for good (its
descriptor then points at the null device, so the interpreter's last flush cannot fail either)
and the command goes on; with a ``log`` path every line is also written there, read or not.
The ``adaroll`` command runs every subcommand inside it.

>>> import io
>>> class Gone(io.StringIO):
...     def write(self, text): raise BrokenPipeError(32, "Broken pipe")
>>> s = GuardedStream(Gone(), None)
>>> s.write("lost, and nothing fails"), s.closed_by_reader
(23, True)
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

__all__ = ["GuardedStream", "guarded_output"]


class GuardedStream:
    """A text stream that writes to ``log`` (if any) always and to ``stream`` until a write or
    flush fails once (``closed_by_reader`` then True)."""

    def __init__(self, stream: Any, log: TextIO | None) -> None:
        self.stream: Any = stream
        self.log = log
        self.closed_by_reader = False

    def write(self, text: str) -> int:
        """Write ``text`` to the log and, while it takes writes, to the stream."""
        if self.log is not None:
            with contextlib.suppress(ValueError, OSError):
                self.log.write(text)
        if self.stream is not None:
            try:
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError):
                self._drop()
        return len(text)

    def flush(self) -> None:
        """Flush the stream (a failure drops it)."""
        if self.stream is not None:
            try:
                self.stream.flush()
            except (OSError, ValueError):
                self._drop()

    def _drop(self) -> None:
        stream, self.stream = self.stream, None
        self.closed_by_reader = True
        with contextlib.suppress(OSError, ValueError, AttributeError, TypeError):
            fd = stream.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)

    def isatty(self) -> bool:
        """Whether the stream is a terminal (False once dropped)."""
        return False if self.stream is None else bool(self.stream.isatty())

    def fileno(self) -> int:
        """The stream's descriptor (``OSError`` once dropped)."""
        if self.stream is None:
            raise OSError("the output was closed by its reader")
        return int(self.stream.fileno())

    @property
    def encoding(self) -> str:
        """The stream's encoding (utf-8 once dropped)."""
        return str(getattr(self.stream, "encoding", None) or "utf-8")

    def writable(self) -> bool:
        """Always: writes never fail."""
        return True


@contextlib.contextmanager
def guarded_output(log: str | os.PathLike[str] | None = None) -> Iterator[None]:
    """Run the block with ``sys.stdout`` and ``sys.stderr`` guarded (``GuardedStream``), and
    with ``log`` (appended to, line-buffered) receiving everything both print."""
    with contextlib.ExitStack() as stack:
        fh = stack.enter_context(Path(log).open("a", buffering=1)) if log is not None else None
        saved = (sys.stdout, sys.stderr)
        sys.stdout = GuardedStream(sys.stdout, fh)  # type: ignore[assignment]
        sys.stderr = GuardedStream(sys.stderr, fh)  # type: ignore[assignment]
        try:
            yield
        finally:
            sys.stdout, sys.stderr = saved
