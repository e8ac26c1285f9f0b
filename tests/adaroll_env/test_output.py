"""adaroll_env.output: a closed standard output never stops a command."""

from __future__ import annotations

import os
import sys

from adaroll_env.output import GuardedStream, guarded_output


def test_a_pipe_whose_reader_is_gone_is_dropped_and_its_descriptor_silenced(tmp_path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader went away
    stream = os.fdopen(write_end, "w")
    log = (tmp_path / "log.txt").open("w")
    guarded = GuardedStream(stream, log)
    assert guarded.write("one\n") == 4 and guarded.closed_by_reader
    guarded.write("two\n")
    guarded.flush()
    # the descriptor now points at the null device: anyone's later write succeeds
    assert os.write(write_end, b"three\n") == 6
    log.close()
    assert (tmp_path / "log.txt").read_text() == "one\ntwo\n"
    assert not guarded.isatty() and guarded.encoding == "utf-8"
    stream.close()


def test_a_working_stream_gets_everything_and_the_log_too(tmp_path) -> None:
    import io

    buf = io.StringIO()
    with (tmp_path / "log.txt").open("w") as log:
        g = GuardedStream(buf, log)
        g.write("a")
        g.write("b\n")
    assert buf.getvalue() == "ab\n" and not g.closed_by_reader
    assert (tmp_path / "log.txt").read_text() == "ab\n"


def test_guarded_output_swaps_both_streams_and_restores_them(tmp_path) -> None:
    before = (sys.stdout, sys.stderr)
    with guarded_output(tmp_path / "c.log"):
        assert isinstance(sys.stdout, GuardedStream) and isinstance(sys.stderr, GuardedStream)
        print("to both")
        print("errors too", file=sys.stderr)
    assert (sys.stdout, sys.stderr) == before
    assert (tmp_path / "c.log").read_text() == "to both\nerrors too\n"
