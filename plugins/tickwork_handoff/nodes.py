"""The open store of every node of this process, by node id, for the hand-off executors.

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

_lock = threading.Lock()
_stores: dict[str, Store] = {}


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
    with _lock:
        _stores[node_id] = node.store


@hookimpl
def tickwork_node_stopped(node_id: str) -> None:
    with _lock:
        _stores.pop(node_id, None)
