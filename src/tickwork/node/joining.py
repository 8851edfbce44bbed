"""A node's way in: open the store, claim the node id, release what this id left behind, sync
the declared jobs, start the executors and the membership; undone as a whole if any step fails
(the counterpart of :func:`.shutdown.leave`)."""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

from ..abc import Executor
from ..scheduling.declare import DeclaredJob
from ..scheduling.sync import SyncReport
from .registration import Registration

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger("tickwork.node")


def join(node: Node, registration: Registration, declared: list[tuple[str, list[DeclaredJob]]]) -> list[SyncReport]:
    """Everything before the node's own start-up (listeners, banner, hooks); returns what syncing
    ``declared`` (:func:`.jobsync.declared_jobs`) did.

    :raises StartAbandoned: if the caller gave up on the start (checked between the steps)
    """
    store = node.store
    store.open()
    try:
        registration.check()
        # Before anything else: releasing "this node's" claims would release a live namesake's.
        registration.register()
    except BaseException:
        store.close()
        raise
    started: list[Executor] = []
    try:
        registration.check()
        # What `jobs add` checks a schedule's executor against: the names this node runs.
        store.announce_executors(node.node_id, sorted(node.executors))
        released = store.release_node(node.node_id, f"node {node.node_id} restarted; run abandoned")
        if released:
            log.warning("released %d claim(s) this node (%s) left behind", released, node.node_id)
        reports = node.sync_jobs(declared)
        registration.check()
        for executor in node.executors.values():
            executor.start()
            started.append(executor)
        node.membership.start(store, node.node_id)
    except BaseException:
        # An application may retry start(): leave no threads or connections behind, and no
        # record that makes the next start wait for it to go stale.
        for executor in started:
            executor.shutdown(wait=False)
        with contextlib.suppress(Exception):
            store.remove_node(node.node_id)
        store.close()
        raise
    return reports
