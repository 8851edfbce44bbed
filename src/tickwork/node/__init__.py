"""A node: :class:`Node` built from the configuration (its store, membership and executors),
its start-up banner, log format and way out (shutdown)."""

from __future__ import annotations

from ..abc import DEFAULT_NODE_TTL
from ..plugin.assembly import build_executors, build_membership, build_store
from .jobsync import unconfigured_executor
from .node import Node

__all__ = ["DEFAULT_NODE_TTL", "Node", "build_executors", "build_membership", "build_store", "unconfigured_executor"]
