"""trainers.run.stopping: a stop signal asks, a second Ctrl-C forces, a closed output is no
obstacle, handlers are restored."""

from __future__ import annotations

import os
import signal

import pytest

from trainers.run import stopping


@pytest.fixture(autouse=True)
def _fresh():
    stopping._requested = None
    yield
    stopping._requested = None


def test_signal_names_and_numbers() -> None:
    assert stopping.signal_name(2) == "SIGINT" and stopping.signal_name(15) == "SIGTERM"
    assert stopping.signal_number("SIGTERM") == 15
    assert stopping.RunInterrupted(15, "x").exit_code == 143


def test_the_first_signal_asks_the_second_ctrl_c_forces_and_hooks_hear_it() -> None:
    heard: list[int] = []
    before = signal.getsignal(signal.SIGTERM)
    with stopping.StopSignals(on_signal=heard.append):
        os.kill(os.getpid(), signal.SIGTERM)
        assert stopping.requested() == signal.SIGTERM and heard == [signal.SIGTERM]
        with pytest.raises(KeyboardInterrupt, match="second SIGINT"):
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGTERM) is before and stopping._on_signal == []
    stopping.clear()
    assert stopping.requested() is None


def test_a_closed_standard_error_does_not_break_the_handler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def closed(fd: int, data: bytes) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(stopping.os, "write", closed)
    stopping._handle(signal.SIGTERM, None)  # the message is lost, the stop is not
    assert stopping.requested() == signal.SIGTERM
