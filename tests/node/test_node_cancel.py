"""A cancelled ``async with Node(...)`` start (issue 31): the start runs in a worker thread that a
cancellation cannot interrupt, and used to finish there unseen, leaving a running node that held
its id (the retry failed with ``NodeIdInUseError``). Cancelled at several points — a slow store
open, a slow job-module import during the sync, a slow ``tickwork_node_started`` plugin — the
start must undo what it did, so that a retry with the same node id starts."""

from __future__ import annotations

import asyncio
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tickwork
from tickwork.config import Config, parse
from tickwork.node import Node, build_store
from tickwork.plugin import hookimpl
from tickwork.plugin.manager import PluginManager

#: A guard against a hang, not a timing.
GUARD_S = 30.0


class Gate:
    """A step that blocks until the test opens it, and says when it is entered."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()

    def __call__(self) -> None:
        self.entered.set()
        assert self.opened.wait(GUARD_S), "the gate was never opened"


class SlowStartPlugin:
    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    @hookimpl
    def tickwork_node_started(self, node_id: str) -> None:
        self.gate()


def config_for(tmp_path: Path, node_id: str, jobs: list[str] | None = None, ttl: float = 1.0) -> Config:
    return parse(
        {
            "scheduler": {"node_id": node_id, "max_sleep": 0.2, "jobs": jobs or []},
            "store": {"path": str(tmp_path / "cancel.db")},
            # A short ttl: without the fix the retry fails within seconds (NodeIdInUseError).
            "membership": {"heartbeat_interval": 0.1, "node_ttl": ttl},
        }
    )


def slow_node(tmp_path: Path, point: str, gate: Gate, node_id: str) -> Node:
    if point == "store open":
        config = config_for(tmp_path, node_id)
        store = build_store(config, PluginManager())
        opening = store.open

        def slow_open() -> Any:
            gate()
            return opening()

        store.open = slow_open  # type: ignore[method-assign]
        return Node(config, store=store)
    if point == "job import":
        module = f"slow_jobs_{uuid.uuid4().hex[:8]}"
        (tmp_path / f"{module}.py").write_text(
            f"from tests.node.test_node_cancel import GATES\nGATES[{module!r}]()\n", encoding="utf-8"
        )
        GATES[module] = gate
        return Node(config_for(tmp_path, node_id, jobs=[module]))
    assert point == "node started"
    return Node(config_for(tmp_path, node_id), manager=PluginManager(extra=[SlowStartPlugin(gate)]))


#: The gates of the generated job modules, by module name.
GATES: dict[str, Callable[[], None]] = {}


def live_nodes(tmp_path: Path) -> list[str]:
    if not (tmp_path / "cancel.db").exists():
        return []
    with tickwork.connect(config_for(tmp_path, "reader")) as admin:
        return [n.id for n in admin.nodes() if n.live]


def node_threads(node_id: str) -> list[str]:
    return [t.name for t in threading.enumerate() if node_id in t.name]


async def enter_forever(node: Node) -> None:
    async with node:
        await asyncio.Event().wait()  # until cancelled


@pytest.mark.parametrize("point", ["store open", "job import", "node started"])
def test_a_cancelled_async_start_stops_what_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    node_id = f"cancelled-{point.replace(' ', '-')}"
    gate = Gate()

    async def main() -> None:
        node = slow_node(tmp_path, point, gate, node_id)
        task = asyncio.create_task(enter_forever(node))
        assert await asyncio.to_thread(gate.entered.wait, GUARD_S)
        task.cancel()
        for _ in range(5):  # let the cancellation reach the start before the slow step ends
            await asyncio.sleep(0)
        gate.opened.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not node.running
        assert node_id not in live_nodes(tmp_path)
        assert node_threads(node_id) == []
        # The retry, with the same node id, starts at once.
        async with Node(config_for(tmp_path, node_id)) as again:
            assert again.running and again.health() == (True, "ok")
        if point == "store open":  # abandoned before it opened anything: the same Node may start
            async with node:
                assert node.running

    asyncio.run(main())
    assert live_nodes(tmp_path) == []


@pytest.mark.timeout(60)  # without the abandon the start waits out the hour: this fails instead
def test_a_cancelled_start_stops_waiting_for_a_crashed_predecessor(tmp_path: Path) -> None:
    """A start waits up to ``node_ttl`` for a crashed predecessor's record (a heartbeat that no
    longer advances) to go stale; cancelled, it stops waiting at once instead of finishing an
    hour later and then being stopped."""
    config = config_for(tmp_path, "successor", ttl=3600.0)
    store = build_store(config, PluginManager())
    store.open()
    try:
        assert store.register_node("successor", "crashed-instance", 3600.0) is None

        async def main() -> None:
            node = Node(config)
            task = asyncio.create_task(enter_forever(node))
            # Most likely in the wait by now; cancelled before it, the start stops at its first step.
            await asyncio.sleep(0.5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert not node.running and node_threads("successor") == []
            assert [n.id for n in store.nodes()] == ["successor"]  # only the predecessor's record
            store.remove_node("successor")  # as if the record had gone stale
            async with Node(config) as again:
                assert again.running

        asyncio.run(main())
    finally:
        store.close()


def test_a_start_interrupted_in_a_plugin_hook_stops_what_it_started(tmp_path: Path) -> None:
    """The synchronous ``with``: a KeyboardInterrupt (Ctrl-C) in a slow start hook."""

    class Interrupting:
        @hookimpl
        def tickwork_node_started(self, node_id: str) -> None:
            raise KeyboardInterrupt

    node = Node(config_for(tmp_path, "interrupted"), manager=PluginManager(extra=[Interrupting()]))
    with pytest.raises(KeyboardInterrupt), node:
        pass
    assert live_nodes(tmp_path) == [] and node_threads("interrupted") == []
    with Node(config_for(tmp_path, "interrupted")) as again:
        assert again.running


def teardown_module() -> None:
    for module in GATES:
        sys.modules.pop(module, None)
