"""The tests' fork server (tests/support/forkedcli.py) answers each command with two lines, its
child's pid and then its exit status; a command that ends at once sends both before the first is
read. Each must still be taken as its own answer: reading them with ``select`` and a buffered
reader's ``readline`` left the second in the reader's buffer, the test waited its whole timeout
for it, and the next command took it as its own (three CI failures in a row)."""

from __future__ import annotations

import os
import select
from pathlib import Path

import pytest

from tests.support.forkedcli import Lines, run_module


def test_two_lines_written_at_once_are_read_one_after_the_other() -> None:
    read, write = os.pipe()
    try:
        os.write(write, b'{"pid": 7}\n{"status": 0}\n')
        lines = Lines(read)
        assert lines.next(5) == b'{"pid": 7}'
        assert lines.next(0.5) == b'{"status": 0}'  # from the buffer: no wait on the pipe
        assert lines.next(0.05) is None
        # What the buffered reader did: after the first line nothing is left on the pipe.
        os.write(write, b"a\nb\n")
        with os.fdopen(os.dup(read), "rb") as buffered:
            assert buffered.readline() == b"a\n"
            assert select.select([buffered], [], [], 0.05)[0] == []  # "b" is in its buffer
    finally:
        os.close(read)
        os.close(write)


def test_a_closed_pipe_is_the_end_not_a_timeout() -> None:
    read, write = os.pipe()
    os.write(write, b"last\n")
    os.close(write)
    lines = Lines(read)
    try:
        assert lines.next(5) == b"last"
        with pytest.raises(EOFError):
            lines.next(5)
    finally:
        os.close(read)


def test_commands_that_end_at_once_each_get_their_own_status(tmp_path: Path) -> None:
    # ``python -m json.tool`` on a file: valid JSON exits 0, a broken file exits 1, at once.
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text("{}", encoding="utf-8")
    bad.write_text("{", encoding="utf-8")
    for i in range(40):
        path = good if i % 2 == 0 else bad
        done = run_module("json.tool", [str(path)], cwd=tmp_path, timeout=20)
        assert done.returncode == (0 if path is good else 1), (i, done)
