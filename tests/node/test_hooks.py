"""Lifecycle hooks on an embedded node: batch-shaped calls, and plugins that raise."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from tickwork.config import parse
from tickwork.engine.listener import SkippedFire
from tickwork.errors import ConfigError
from tickwork.node import Node
from tickwork.plugin import hookimpl
from tickwork.plugin.manager import PluginManager
from tickwork.structures import Finish, JobCall, RunStatus, ScheduleSpec

BURST = 250
WAIT_S = 60  # guard against a hung node; not a timing assertion


class Recorder:
    """A plugin object (registered without an entry point) recording every call."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple[str, int]] = []
        self.finished: list[Finish] = []

    @hookimpl
    def tickwork_runs_started(self, node_id: str, runs: Sequence[JobCall]) -> None:
        with self.lock:
            self.calls.append(("started", len(runs)))

    @hookimpl
    def tickwork_runs_finished(self, results: Sequence[Finish]) -> None:
        with self.lock:
            self.calls.append(("finished", len(results)))
            self.finished.extend(results)

    @hookimpl
    def tickwork_fires_skipped(self, skipped: Sequence[SkippedFire]) -> None:
        with self.lock:
            self.calls.append(("skipped", len(skipped)))

    @hookimpl
    def tickwork_node_stopped(self, node_id: str) -> None:
        with self.lock:
            self.calls.append(("stopped", 0))


class Broken:
    @hookimpl
    def tickwork_runs_finished(self, results: Sequence[Finish]) -> None:
        raise RuntimeError("broken observer")


class BadConfig:
    @hookimpl
    def tickwork_node_started(self, config: object) -> None:
        raise ConfigError("observer: [observer] table is missing")


def node_with(tmp_path: Path, *plugins: object) -> Node:
    config = parse({"store": {"path": str(tmp_path / "hooks.db")}, "scheduler": {"node_id": "hooks", "lookahead": 0}})
    manager = PluginManager(extra=plugins)
    return Node(config, manager=manager)


def test_a_burst_makes_one_started_call_per_claimed_batch(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    recorder = Recorder()
    node = node_with(tmp_path, Broken(), recorder)  # Broken raises first on every batch
    node.open()
    try:
        now = node.store.now()
        for i in range(BURST):
            node.store.add(ScheduleSpec(f"b{i}", "interval", "1h", "tests.support.context_jobs:noop"), now)
        node.start()
        deadline = time.monotonic() + WAIT_S
        while len(recorder.finished) < BURST:
            assert time.monotonic() < deadline, f"only {len(recorder.finished)} of {BURST} runs reported"
            time.sleep(0.05)
    finally:
        node.stop()
    started = [n for kind, n in recorder.calls if kind == "started"]
    assert sum(started) == BURST
    assert len(started) <= -(-BURST // 100) + 2  # claim batches of 100, not one call per fire
    assert {f.outcome.status for f in recorder.finished} == {RunStatus.SUCCEEDED}
    assert recorder.calls[-1] == ("stopped", 0)
    # The broken plugin raised on every batch: its traceback logged once, the rest one line each.
    assert caplog.text.count("plugin Broken: tickwork_runs_finished raised; ignored") == 1
    if sum(kind == "finished" for kind, _ in recorder.calls) > 1:
        assert "plugin Broken: tickwork_runs_finished raised again: RuntimeError('broken observer')" in caplog.text


def test_a_config_error_from_node_started_fails_the_start(tmp_path: Path) -> None:
    node = node_with(tmp_path, BadConfig())
    with pytest.raises(ConfigError, match=r"\[observer\] table is missing"):
        node.start()
    assert not node.running
    node_with(tmp_path).start().stop()  # the store was closed and the node left: it starts again
