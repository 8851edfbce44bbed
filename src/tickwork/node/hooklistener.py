"""The node's wiring of the engine's events to the lifecycle hooks: each event of
:data:`~tickwork.engine.listener.ENGINE_EVENTS` becomes a call of its ``tickwork_<event>`` hook
(with the event's parameters by name and ``node_id``). The node sits above both the engine and
the plugin kit, so neither imports the other for this."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..engine.listener import ENGINE_EVENTS, EngineListener, hook_name
from ..plugin.lifecycle import LifecycleHooks


class HookListener(EngineListener):
    """Turns the engine's batched events into lifecycle hook calls for one node. An event no
    plugin implements stays the inherited no-op: it costs nothing per event."""

    def __init__(self, hooks: LifecycleHooks, node_id: str) -> None:
        self.hooks = hooks
        self.node_id = node_id
        for event, params in ENGINE_EVENTS.items():
            if hooks.implemented(hook_name(event)):
                setattr(self, event, self._caller(hook_name(event), params))

    def _caller(self, hook: str, params: tuple[str, ...]) -> Callable[..., None]:
        def call(*args: object) -> None:
            carried: dict[str, Any] = dict(zip(params, args, strict=True))
            self.hooks.call(hook, node_id=self.node_id, **carried)

        return call
