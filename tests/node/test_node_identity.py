"""A second live process with the same ``scheduler.node_id`` refuses to start (it would otherwise
release the first one's running claims as "left behind"); real processes on SQLite."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tickwork.config import Config, PluginChoice, SchedulerConfig
from tickwork.node import Node
from tickwork.structures import RunStatus, ScheduleSpec, ScheduleState
from tickwork_sqlite.store import SQLiteStore

pytestmark = pytest.mark.slow

JOBS = """
import tickwork


@tickwork.cron("* * * * * *", name="tick")
def tick():
    pass
"""


def test_a_second_live_node_with_the_same_id_refuses_to_start(tmp_path: Path) -> None:
    (tmp_path / "twin_jobs.py").write_text(JOBS, encoding="utf-8")
    (tmp_path / "tickwork.toml").write_text(
        textwrap.dedent(
            f"""
            [scheduler]
            node_id = "twin"
            jobs = ["twin_jobs"]
            [store]
            plugin = "sqlite"
            path = "{tmp_path / "twin.db"}"
            """
        ),
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != "TICKWORK_CONFIG"}
    script = str(Path(sys.executable).with_name("tickwork"))
    first = subprocess.Popen(
        # Long enough for a loaded machine to start the second process; stopped by SIGTERM below.
        [script, "run", "--for", "120"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "twin.db").exists() or not _nodes(tmp_path / "twin.db"):
            assert time.monotonic() < deadline and first.poll() is None, "the first node did not start"
            time.sleep(0.1)
        second = subprocess.run(
            [script, "run", "--for", "2"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )
        assert second.returncode == 1, second.stderr
        assert second.stderr.startswith("tickwork: error: node id 'twin' is in use by a live node"), second.stderr
        assert second.stderr.count("\n") == 1
        # The first node runs on untouched: it keeps firing (a success after the refusal), then stops.
        seen = len(_succeeded(tmp_path / "twin.db"))
        while len(_succeeded(tmp_path / "twin.db")) <= seen:
            assert time.monotonic() < deadline + 60 and first.poll() is None, "the first node stopped firing"
            time.sleep(0.2)
        first.send_signal(signal.SIGTERM)
        _, err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    store = SQLiteStore(str(tmp_path / "twin.db"))
    store.open()
    try:
        statuses = {r.status for r in store.history(limit=100)}
    finally:
        store.close()
    assert RunStatus.ABANDONED not in statuses and RunStatus.SUCCEEDED in statuses


def _succeeded(path: Path) -> list[int]:
    store = SQLiteStore(str(path), create=False)
    try:
        store.open(check_schema=False)
        return [r.id for r in store.history(limit=1000) if r.status is RunStatus.SUCCEEDED]
    finally:
        store.close()


def _nodes(path: Path) -> list[str]:
    store = SQLiteStore(str(path), create=False)
    try:
        store.open(check_schema=False)
        return [n.id for n in store.nodes()]
    except Exception:
        return []
    finally:
        store.close()


def test_a_restart_after_a_crash_waits_for_the_dead_record_then_releases_what_it_left(tmp_path: Path) -> None:
    path = str(tmp_path / "crash.db")
    store = SQLiteStore(path)
    store.upgrade()
    store.open()
    store.add(ScheduleSpec("a", "cron", "0 0 1 1 *", "m:f"), store.now())
    assert store.register_node("n1", "the-crashed-process", 1.0) is None
    store.claim_due("n1", limit=1, buckets=None)  # then it was killed: its record stops beating
    store.close()
    config = Config(
        scheduler=SchedulerConfig(node_id="n1"),
        store=PluginChoice("sqlite", {"path": path}),
        membership=PluginChoice("single", {"heartbeat_interval": 0.2, "node_ttl": 1.0}),
    )
    node = Node(config)
    node.start()
    try:
        # The started engine may claim the released fire again at once: that claim comes back
        # without a run (the fire is recorded, abandoned) and its end is written with the next
        # batch of ends (scheduler.end_batch_window), after which the schedule is idle again.
        deadline = time.monotonic() + 10
        while node.store.get("a").state is not ScheduleState.IDLE:
            assert time.monotonic() < deadline, "the schedule the crashed process held never became idle"
            time.sleep(0.02)
        (run,) = node.store.history()
        assert run.status is RunStatus.ABANDONED and "restarted" in (run.error or "")
    finally:
        node.shutdown()
