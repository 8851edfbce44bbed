"""tickwork: periodic jobs fired exactly once per due time across a cluster of nodes.

Declare jobs in code::

    import tickwork

    @tickwork.cron("*/5 * * * *")
    def cleanup() -> None: ...

and run ``tickwork run`` with ``[scheduler] jobs = ["myapp.jobs"]`` in ``tickwork.toml``, or run a
node inside your application with ``with tickwork.Node.from_config():`` (docs/embedding.md).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

from .admin import Admin, connect
from .admin.info import NodeInfo, ScheduleInfo
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
from .node import Node
from .plugin import hookimpl
from .plugin.runcontext import RunContext, current_run
from .scheduling.declare import calendar, cron, every, schedule
from .scheduling.triggers import next_fire_times
from .structures import MisfirePolicy, OnAbandon, OnFinish, Overlap, RunRecord, RunStatus, ScheduleSpec, ScheduleState

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
    "OnAbandon",
    "OnFinish",
    "Overlap",
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

#: Modules that moved into sub-packages, by their old path. Importing an old path gives the module
#: at its new one (the same object), so code written against the old layout keeps working.
MOVED_MODULES = {
    "tickwork.adminspec": "tickwork.scheduling.validation",
    "tickwork.adminwrites": "tickwork.admin.writes",
    "tickwork.allowed": "tickwork.plugin.allowed",
    "tickwork.banner": "tickwork.node.banner",
    "tickwork.calls": "tickwork.plugin.calls",
    "tickwork.clioutput": "tickwork.cli.output",
    "tickwork.cliparser": "tickwork.cli.parser",
    "tickwork.commands": "tickwork.plugin.command",
    "tickwork.dbschema": "tickwork.admin.dbschema",
    "tickwork.dburl": "tickwork.sql.dburl",
    "tickwork.hooks": "tickwork.plugin.lifecycle",
    "tickwork.hookspecs": "tickwork.plugin.specs",
    "tickwork.importerrors": "tickwork.scheduling.importerrors",
    "tickwork.info": "tickwork.admin.info",
    "tickwork.jobs": "tickwork.scheduling.declare",
    "tickwork.listener": "tickwork.engine.listener",
    "tickwork.logformat": "tickwork.node.logformat",
    "tickwork.numbers": "tickwork.config.numbers",
    "tickwork.plugins": "tickwork.plugin.manager",
    "tickwork.registry": "tickwork.plugin.registry",
    "tickwork.runcontext": "tickwork.plugin.runcontext",
    "tickwork.runlog": "tickwork.engine.runlog",
    "tickwork.schedulefile": "tickwork.scheduling.schedulefile",
    "tickwork.schedules": "tickwork.scheduling.sync",
    "tickwork.shutdown": "tickwork.node.shutdown",
    "tickwork.signature": "tickwork.plugin.signature",
    "tickwork.tracebacks": "tickwork.plugin.tracebacks",
    "tickwork.triggers": "tickwork.scheduling.triggers",
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds :data:`MOVED_MODULES` by their old path and hands out the module at its new path."""

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(MOVED_MODULES[spec.name])
        self._specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system gave the module the old path's spec; it keeps its own.
        module.__spec__ = self._specs.pop(module.__name__, module.__spec__)


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())
