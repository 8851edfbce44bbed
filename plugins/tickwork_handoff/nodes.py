"""The open store of every node of this process, by node id, for the hand-off executors; and the
node's stuck hand-off watch (:mod:`.pickup`), started and stopped with the node.

An executor is built from its config table alone; the store it checks previous hand-offs in is
the store of the node that runs the fire (``JobCall.node_id``), which this plugin learns from the
node lifecycle hooks.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from tickwork.config import Config
from tickwork.errors import ExecutorError
from tickwork.plugin import hookimpl

if TYPE_CHECKING:
    from tickwork.abc import RunningNode, Store

    from .pickup import PickupWatch

_lock = threading.Lock()
_stores: dict[str, Store] = {}
_watches: dict[str, PickupWatch] = {}


def store_of(node_id: str) -> Store:
    """The store of the running node ``node_id`` of this process.

    :raises tickwork.errors.ExecutorError: if no node of that id runs here
    """
    with _lock:
        store = _stores.get(node_id)
    if store is None:
        raise ExecutorError(f"no running node {node_id!r} in this process: a hand-off needs the node's store")
    return store


@hookimpl
def tickwork_node_started(node_id: str, config: Config, node: RunningNode) -> None:
    # Deferred: the executor module imports store_of from this one.
    from .executor import HandoffExecutor
    from .pickup import PickupWatch

    handoffs = [e for e in node.executors.values() if isinstance(e, HandoffExecutor)]
    watch = PickupWatch(node_id, node.store, handoffs) if handoffs else None
    with _lock:
        _stores[node_id] = node.store
        if watch is not None:
            _watches[node_id] = watch
    if watch is not None:
        watch.start()


@hookimpl
def tickwork_node_stopping(node_id: str) -> None:
    with _lock:
        watch = _watches.pop(node_id, None)
    if watch is not None:
        watch.stop()


@hookimpl
def tickwork_node_stopped(node_id: str) -> None:
    with _lock:
        _stores.pop(node_id, None)
        watch = _watches.pop(node_id, None)
    if watch is not None:
        watch.stop()
