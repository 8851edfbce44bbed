"""The command line's background log writer (``tickwork.node.logstream``): a stderr that stops
taking lines never blocks the thread that logs; what cannot wait is dropped, counted, and said
where it was dropped; everything waiting is written at exit. A real node whose stderr nobody
reads keeps its loop going."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import threading
import time
from pathlib import Path

import tickwork
from tests.support.processes import PROCESS_TIMEOUT_S, tickwork_command
from tickwork.node.logstream import BackgroundStreamHandler


class StuckStream(io.StringIO):
    """A stream whose writes wait until :attr:`release` is set, as a full pipe does."""

    def __init__(self) -> None:
        super().__init__()
        self.writing = threading.Event()
        self.release = threading.Event()

    def write(self, text: str) -> int:
        self.writing.set()
        self.release.wait()
        return super().write(text)


def record(message: str) -> logging.LogRecord:
    return logging.LogRecord("tickwork.runs", logging.INFO, __file__, 1, message, None, None)


def test_a_stuck_stream_never_blocks_the_logging_thread_and_drops_are_counted_where_they_happened() -> None:
    stream = StuckStream()
    handler = BackgroundStreamHandler(stream, capacity=3)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.emit(record("line 1"))
    assert stream.writing.wait(5)  # the writer holds line 1, stuck in write()
    started = time.monotonic()
    for n in range(2, 11):
        handler.emit(record(f"line {n}"))  # 2-4 wait in the queue, 5-10 are dropped
    assert time.monotonic() - started < 1.0  # none of them waited for the stream
    stream.release.set()
    deadline = time.monotonic() + 5
    while "line 4" not in stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    handler.emit(record("line 11"))
    handler.close()
    assert stream.getvalue().splitlines() == [
        "line 1",
        "line 2",
        "line 3",
        "line 4",
        "6 log line(s) dropped: stderr was not read as fast as they came (the node went on; the history has every run)",
        "line 11",
    ]


def test_close_writes_every_waiting_line_and_a_count_left_at_exit() -> None:
    stream = io.StringIO()
    handler = BackgroundStreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    for n in range(500):
        handler.emit(record(f"line {n}"))
    handler.close()
    assert stream.getvalue().splitlines() == [f"INFO line {n}" for n in range(500)]


def quiet_jobs(count: int) -> str:
    """A job module of ``count`` quiet every-second jobs: a line in the log per run end each."""
    jobs = "".join(
        f'\n\n@tickwork.cron("* * * * * *", name="tick-{n:03d}")\ndef tick_{n:03d}() -> None:\n    pass\n'
        for n in range(count)
    )
    return f'"""Quiet every-second jobs."""\n\nimport tickwork\n{jobs}'


def test_a_node_whose_stderr_nobody_reads_keeps_firing(tmp_path: Path) -> None:
    (tmp_path / "quiet_jobs.py").write_text(quiet_jobs(150), encoding="utf-8")
    db = tmp_path / "lc.db"
    (tmp_path / "tickwork.toml").write_text(
        f'[scheduler]\njobs = ["quiet_jobs"]\nnode_id = "unread"\n\n[store]\npath = "{db}"\n', encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if k != "TICKWORK_CONFIG"}
    # 150 run ends a second fill a 64 KiB pipe in about 4 s; nobody reads it for 9 s.
    process = subprocess.Popen(
        [*tickwork_command(), "run", "--for", "12"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        time.sleep(9)
        assert process.poll() is None
        err = process.communicate(timeout=PROCESS_TIMEOUT_S)[1]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err[-2000:]
    # A loop blocked on stderr would have stalled (and said so once it could write again).
    assert "a pass of the loop took" not in err and "stalled" not in err, err[-2000:]
    with tickwork.connect({"store": {"path": str(db)}}) as admin:
        runs = admin.history(limit=100_000)
    fired_seconds = {r.scheduled_for for r in runs if r.status.value == "succeeded"}
    statuses = {r.status.value for r in runs}
    assert statuses == {"succeeded"}, statuses  # none skipped while stderr was full
    assert len(fired_seconds) >= 8, sorted(fired_seconds)
    assert "node unread stopped" in err  # the lines that waited were written at exit
