"""The engine's events are declared once (:class:`EngineListener`): the safe wrapper, the hook
adapter and the hookspecs follow that declaration."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from tickwork.engine.listener import ENGINE_EVENTS, EngineListener, SafeListener, hook_name
from tickwork.node.hooklistener import HookListener
from tickwork.plugin import hookimpl, specs
from tickwork.plugin.lifecycle import LIFECYCLE_HOOKS, LifecycleHooks
from tickwork.plugin.manager import PluginManager
from tickwork.structures import Finish, JobCall, SkippedFire

#: One argument per parameter name any event carries, for calling every event generically.
SAMPLE: dict[str, object] = {
    "runs": (),
    "results": (),
    "skipped": (SkippedFire("job", datetime(2026, 1, 1, tzinfo=UTC), "missed"),),
    "ended": (),
    "count": 3,
    "seconds": 0.25,
    "error": RuntimeError("database away"),
}


def test_the_events_are_the_listener_s_public_methods() -> None:
    assert list(ENGINE_EVENTS) == [
        "runs_started",
        "runs_finished",
        "fires_skipped",
        "retries_planned",
        "claimed",
        "store_error",
    ]
    assert ENGINE_EVENTS["claimed"] == ("count", "seconds")


@pytest.mark.parametrize("event", sorted(ENGINE_EVENTS))
def test_each_event_has_its_hookspec_with_the_same_parameters(event: str) -> None:
    spec = getattr(specs, hook_name(event), None)
    assert spec is not None, f"no hookspec {hook_name(event)} for the engine event {event}"
    assert tuple(inspect.signature(spec).parameters) == ("node_id", *ENGINE_EVENTS[event])
    assert hook_name(event) in LIFECYCLE_HOOKS


def test_no_hookspec_claims_to_be_an_event_the_engine_does_not_declare() -> None:
    """The hooks fed by the listener seam are exactly the events (the node's own hooks aside)."""
    node_hooks = {
        "tickwork_node_started",
        "tickwork_node_stopping",
        "tickwork_node_stopped",
        "tickwork_membership_changed",
        "tickwork_health_changed",
        "tickwork_watch_health",
    }
    assert set(LIFECYCLE_HOOKS) - node_hooks == {hook_name(e) for e in ENGINE_EVENTS}


class Raising(EngineListener):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def __getattribute__(self, name: str) -> object:
        if name in ENGINE_EVENTS:
            seen = object.__getattribute__(self, "seen")

            def record(*args: object) -> None:
                seen.append(name)
                raise RuntimeError(f"observer bug in {name}")

            return record
        return object.__getattribute__(self, name)


def test_the_safe_listener_forwards_every_event_and_swallows_errors_once_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    inner = Raising()
    safe = SafeListener(inner)
    with caplog.at_level(logging.ERROR, logger="tickwork.engine"):
        for _ in range(2):
            for event, params in ENGINE_EVENTS.items():
                getattr(safe, event)(*(SAMPLE[p] for p in params))
    assert inner.seen == list(ENGINE_EVENTS) * 2
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == len(ENGINE_EVENTS)  # once per event, not per call
    assert all("raised; ignored" in line for line in logged)


class EveryHook:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, object]]] = []

    @hookimpl
    def tickwork_runs_started(self, node_id: str, runs: Sequence[JobCall]) -> None:
        self.calls.append(("runs_started", {"node_id": node_id, "runs": runs}))

    @hookimpl
    def tickwork_runs_finished(self, node_id: str, results: Sequence[Finish]) -> None:
        self.calls.append(("runs_finished", {"node_id": node_id, "results": results}))

    @hookimpl
    def tickwork_fires_skipped(self, node_id: str, skipped: Sequence[SkippedFire]) -> None:
        self.calls.append(("fires_skipped", {"node_id": node_id, "skipped": skipped}))

    @hookimpl
    def tickwork_retries_planned(self, node_id: str, ended: Sequence[Finish]) -> None:
        self.calls.append(("retries_planned", {"node_id": node_id, "ended": ended}))

    @hookimpl
    def tickwork_claimed(self, node_id: str, count: int, seconds: float) -> None:
        self.calls.append(("claimed", {"node_id": node_id, "count": count, "seconds": seconds}))

    @hookimpl
    def tickwork_store_error(self, node_id: str, error: Exception) -> None:
        self.calls.append(("store_error", {"node_id": node_id, "error": error}))


def test_the_hook_listener_turns_each_event_into_its_hook() -> None:
    plugin = EveryHook()
    manager = PluginManager(extra=[plugin], entry_points_enabled=False)
    listener = HookListener(LifecycleHooks(manager), "n1")
    for event, params in ENGINE_EVENTS.items():
        getattr(listener, event)(*(SAMPLE[p] for p in params))
    assert plugin.calls == [
        (event, {"node_id": "n1", **{p: SAMPLE[p] for p in params}}) for event, params in ENGINE_EVENTS.items()
    ]


def test_an_event_nobody_hooks_is_the_listener_s_no_op() -> None:
    listener = HookListener(LifecycleHooks(PluginManager(entry_points_enabled=False)), "n1")
    assert all(getattr(type(listener), e) is getattr(EngineListener, e) for e in ENGINE_EVENTS)
    assert all(e not in vars(listener) for e in ENGINE_EVENTS)
