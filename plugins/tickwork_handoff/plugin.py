"""Registers the hand-off core's node hooks (entry point ``handoff = "tickwork_handoff.plugin"``):
it keeps each running node's store for the ``celery``, ``rq`` and ``dramatiq`` executors."""

from __future__ import annotations

from .nodes import tickwork_node_started, tickwork_node_stopped

__all__ = ["tickwork_node_started", "tickwork_node_stopped"]
