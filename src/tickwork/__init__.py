"""tickwork: periodic jobs fired exactly once per due time across a cluster of nodes.

Declare jobs in code::

    import tickwork

    @tickwork.cron("*/5 * * * *")
    def cleanup() -> None: ...

and run ``tickwork run`` with ``[scheduler] jobs = ["myapp.jobs"]`` in ``tickwork.toml``, or run a
node inside your application with ``with tickwork.Node.from_config():`` (docs/embedding.md).
"""

from __future__ import annotations

from .admin import Admin, connect
from .errors import (
    ConfigError,
    DatabaseMissingError,
    DeclarationError,
    ExecutorError,
    PluginNotFoundError,
    ScheduleExistsError,
    ScheduleNotFoundError,
    SchemaOutdatedError,
    StoreError,
    TickworkError,
    TriggerError,
)
from .hookspecs import hookimpl
from .info import NodeInfo, ScheduleInfo
from .jobs import calendar, cron, every, schedule
from .node import Node
from .runcontext import RunContext, current_run
from .structures import MisfirePolicy, RunRecord, RunStatus, ScheduleSpec, ScheduleState
from .triggers import next_fire_times

__version__ = "0.1.0"

__all__ = [
    "Admin",
    "ConfigError",
    "DatabaseMissingError",
    "DeclarationError",
    "ExecutorError",
    "MisfirePolicy",
    "Node",
    "NodeInfo",
    "PluginNotFoundError",
    "RunContext",
    "RunRecord",
    "RunStatus",
    "ScheduleExistsError",
    "ScheduleInfo",
    "ScheduleNotFoundError",
    "ScheduleSpec",
    "ScheduleState",
    "SchemaOutdatedError",
    "StoreError",
    "TickworkError",
    "TriggerError",
    "calendar",
    "connect",
    "cron",
    "current_run",
    "every",
    "hookimpl",
    "next_fire_times",
    "schedule",
]
