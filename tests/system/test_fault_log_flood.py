"""A real ``tickwork run`` node whose job floods the log with 100,000 lines at once (issue #40,
"not yet tried from outside"): the node's log-writing thread (``tickwork.node.logstream``) must
keep the node's loop out of it and account for every line.

The node's stderr is a pipe the test does not read until the flood is over, so the writer is
stuck on a full pipe and its queue overflows: most of the flood must be dropped and counted, not
waited for. Judged from

* the history: every every-second schedule ran every second, before, during and after the flood
  (no gap, nothing ``skipped``);
* the log: the lines written plus the counts the node's ``N log line(s) dropped`` warnings give
  equal the records its handler was handed (counted inside the node, tests/support/log_flood_jobs.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

import pytest

import tickwork
from tests.support.log_flood_jobs import FLOOD_LINES, FLOOD_LOGGER, PROBE_MARKER, TICKS
from tests.support.paths import REPO
from tickwork.structures import RunRecord, RunStatus

pytestmark = pytest.mark.slow

#: Guards against a hung process or a flood that never ends; not timing assertions.
PROCESS_TIMEOUT_S = 60
#: Seconds the node keeps firing after the flood, with its stderr read again.
AFTER_FLOOD_S = 3.0
DROPPED_LOGGER = "tickwork.log"
DROPPED_SUFFIX = " log line(s) dropped"


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.1)


def parse(stderr: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The node's JSON log lines, and whatever else reached stderr (tracebacks, prints)."""
    entries: list[dict[str, Any]] = []
    other: list[str] = []
    for line in stderr.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            other.append(line)
            continue
        if isinstance(entry, dict) and "message" in entry:
            entries.append(entry)
        else:
            other.append(line)
    return entries, other


def dropped_count(entry: dict[str, Any]) -> int | None:
    """N of a ``N log line(s) dropped`` warning, else None."""
    message: str = entry["message"]
    if entry["logger"] != DROPPED_LOGGER or DROPPED_SUFFIX not in message:
        return None
    return int(message.split(" ", 1)[0])


def gaps(runs: list[RunRecord], name: str) -> tuple[list[datetime], datetime, datetime]:
    """The whole seconds between a schedule's first and last recorded fire that have no run."""
    fired = sorted(r.scheduled_for for r in runs if r.schedule == name)
    first, last = fired[0], fired[-1]
    seconds = int((last - first).total_seconds())
    wanted = {first + timedelta(seconds=s) for s in range(seconds + 1)}
    return sorted(wanted - set(fired)), first, last


def test_a_flood_of_log_lines_stops_no_fire_and_every_line_is_written_or_counted_dropped(tmp_path: Path) -> None:
    db = tmp_path / "flood.db"
    config = tmp_path / "tickwork.toml"
    config.write_text(
        f'[scheduler]\njobs = ["tests.support.log_flood_jobs"]\nnode_id = "flooded"\n\n'
        f'[store]\npath = "{db}"\n\n[logging]\nformat = "json"\n',
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TICKWORK_CONFIG", "TICKWORK_LOG_LEVEL")}
    env.update(FLOOD_DIR=str(tmp_path), PYTHONPATH=str(REPO))
    stdout = (tmp_path / "stdout.txt").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "tickwork.cli", "run", "--config", str(config)],
        cwd=REPO,
        env=env,
        stdout=stdout,
        stderr=subprocess.PIPE,
    )
    stdout.close()
    chunks: list[bytes] = []

    def read_all(pipe: IO[bytes]) -> None:
        chunks.append(pipe.read())

    reader = threading.Thread(target=read_all, args=(process.stderr,), daemon=True)
    try:
        with tickwork.connect({"store": {"path": str(db)}}) as admin:
            # Not reading stderr yet: the node's start-up lines fit in the pipe, the flood does not.
            wait_until(
                lambda: (
                    process.poll() is not None
                    or (
                        db.exists()
                        and len({r.schedule for r in admin.history(status="succeeded", limit=1000)} & set(TICKS))
                        == len(TICKS)
                    )
                ),
                PROCESS_TIMEOUT_S,
                "every tick schedule to run once",
            )
            assert process.poll() is None, "the node exited"
            admin.trigger("flood")
            wait_until(
                lambda: process.poll() is not None or (tmp_path / "flood.json").exists(),
                PROCESS_TIMEOUT_S,
                "the flood to end",
            )
            assert process.poll() is None, "the node exited during the flood"
            flood_ended = admin.store().now()
            # Read again: what waits in the writer's queue goes out, and the drop count with it.
            reader.start()
            time.sleep(AFTER_FLOOD_S)
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=PROCESS_TIMEOUT_S) == 0
            reader.join(PROCESS_TIMEOUT_S)
            runs = admin.history(limit=100_000)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = b"".join(chunks).decode(errors="replace")
    flood = json.loads((tmp_path / "flood.json").read_text())
    handled = json.loads((tmp_path / "handled.json").read_text())
    entries, other = parse(stderr)
    context = f"stderr tail:\n{stderr[-3000:]}"

    # The node kept firing: before, during and after the flood, each tick schedule ran every second.
    (flood_run,) = [r for r in runs if r.schedule == "flood"]
    assert flood_run.status is RunStatus.SUCCEEDED, flood_run
    assert flood_run.started_at is not None
    ticks = [r for r in runs if r.schedule in TICKS]
    assert [r for r in ticks if r.status is not RunStatus.SUCCEEDED] == [], context
    for name in TICKS:
        missing, first, last = gaps(ticks, name)
        assert missing == [], (name, missing)
        # The span judged covers the flood and the seconds after it.
        assert first < flood_run.started_at and last >= flood_ended + timedelta(seconds=AFTER_FLOOD_S - 1.5), (
            name,
            first,
            last,
            flood_run,
            flood_ended,
        )

    # Every line handed to the handler after the probe was written or counted dropped.
    assert flood["lines"] == FLOOD_LINES
    assert "handled" in handled, handled
    assert handled["handler"] == "BackgroundStreamHandler", handled
    markers = [i for i, e in enumerate(entries) if e["message"] == PROBE_MARKER]
    assert len(markers) == 1, context
    before = entries[: markers[0]]
    assert [e for e in before if dropped_count(e) is not None] == [], "lines dropped before the flood"
    counted = entries[markers[0] :]
    drops = [n for e in counted if (n := dropped_count(e)) is not None]
    written = [e for e in counted if dropped_count(e) is None]
    flood_written = sum(1 for e in written if e["logger"] == FLOOD_LOGGER and e["message"] != PROBE_MARKER)
    # The pipe was full: the flood overflowed the writer's queue (else this tested nothing).
    assert sum(drops) > 0, context
    assert 0 < flood_written < FLOOD_LINES
    # Anything else on stderr (a warning printed by a library) is not the handler's and not counted.
    assert len(written) + sum(drops) == handled["handled"], (len(written), drops, handled, other[:20])
    print(
        f"flood: {FLOOD_LINES} lines in {flood['seconds']:.2f} s; handled {handled['handled']}, "
        f"written {len(written)} ({flood_written} of the flood), dropped {sum(drops)} in {len(drops)} warning(s); "
        f"{len(ticks)} tick runs"
    )
