"""The admin API (:func:`tickwork.connect`): read and change schedules, the history and nodes
of a store without running a node; what the CLI and the dashboard are built on."""

from __future__ import annotations

from ..abc import DEFAULT_NODE_TTL
from .api import Admin, ConfigSource, connect, load_config, missing_message

__all__ = ["DEFAULT_NODE_TTL", "Admin", "ConfigSource", "connect", "load_config", "missing_message"]
