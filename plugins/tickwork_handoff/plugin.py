"""Registers the hand-off core's node hooks (entry point ``handoff = "tickwork_handoff.plugin"``):
it keeps each running node's store for the ``celery``, ``rq`` and ``dramatiq`` executors, and runs
the node's stuck hand-off watch (:mod:`.pickup`)."""

from __future__ import annotations

from .nodes import tickwork_node_started, tickwork_node_stopped, tickwork_node_stopping

__all__ = ["tickwork_node_started", "tickwork_node_stopped", "tickwork_node_stopping"]
