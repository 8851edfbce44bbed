"""Calling the lifecycle hooks (:mod:`.specs`) safely. What feeds them from the engine's
listener seam is the node's wiring (:mod:`tickwork.node.hooklistener`): this package never
imports the engine.

Each implementation is called on its own, so one plugin that raises neither stops the node nor
keeps the event from the other plugins. Hooks nobody implements cost nothing per event.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .manager import PluginManager

log = logging.getLogger("tickwork.hooks")

LIFECYCLE_HOOKS = (
    "tickwork_node_started",
    "tickwork_node_stopping",
    "tickwork_node_stopped",
    "tickwork_runs_started",
    "tickwork_runs_finished",
    "tickwork_fires_skipped",
    "tickwork_retries_planned",
    "tickwork_membership_changed",
    "tickwork_claimed",
    "tickwork_store_error",
    "tickwork_health_changed",
    "tickwork_watch_health",
)


class LifecycleHooks:
    """The lifecycle hook implementations of one plugin manager, looked up once."""

    def __init__(self, manager: PluginManager) -> None:
        self._impls: dict[str, list[tuple[str, Callable[..., object], tuple[str, ...]]]] = {
            name: manager.implementations(name) for name in LIFECYCLE_HOOKS
        }
        self._warned: set[tuple[str, str]] = set()

    def implemented(self, hook_name: str) -> bool:
        return bool(self._impls[hook_name])

    def wanted(self, hook_name: str, **kwargs: Any) -> bool:
        """Whether some implementation of the question ``hook_name`` answers true (one that
        raises counts as no, and is logged like in :meth:`call`)."""
        answers: list[object] = []
        for plugin, function, argnames in self._impls[hook_name]:
            try:
                answers.append(function(**{name: kwargs[name] for name in argnames}))
            except Exception:
                log.exception("plugin %s: %s raised; taken as no", plugin, hook_name)
        return any(answers)

    def call(self, hook_name: str, *, reraise: tuple[type[Exception], ...] = (), **kwargs: Any) -> None:
        """Call every implementation of ``hook_name`` with the arguments it asks for; an
        exception is logged (with its traceback the first time per plugin and hook) and ignored,
        unless it is one of ``reraise``."""
        for plugin, function, argnames in self._impls[hook_name]:
            try:
                function(**{name: kwargs[name] for name in argnames})
            except reraise:
                raise
            except Exception as exc:
                key = (plugin, hook_name)
                if key in self._warned:
                    log.warning("plugin %s: %s raised again: %r; ignored", plugin, hook_name, exc)
                else:
                    self._warned.add(key)
                    log.exception("plugin %s: %s raised; ignored (the node keeps running)", plugin, hook_name)
