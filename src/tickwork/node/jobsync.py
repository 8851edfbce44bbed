"""The jobs a node declares in code (``[scheduler] jobs``), checked against the executors it runs
and synced into the store at start-up."""

from __future__ import annotations

from ..abc import Executor, Store
from ..config.files import Config
from ..errors import DeclarationError
from ..plugin.manager import PluginManager
from ..scheduling.declare import DeclaredJob, declared_in
from ..scheduling.importerrors import function_location
from ..scheduling.sync import SyncReport, sync_module


def unconfigured_executor(config: Config, manager: PluginManager, job: DeclaredJob) -> DeclarationError:
    """The error for a declared job whose executor this node does not run: every one of its runs
    would fail, so the node refuses to start."""
    name = job.spec.executor
    func = job.function
    where = f"{func.__module__}.{func.__qualname__} ({function_location(func)})"
    configured = ", ".join(sorted({*config.executors, config.scheduler.default_executor}))
    if name not in manager.executors.names():
        registered = ", ".join(sorted(manager.executors.names()))
        return DeclarationError(f"{where}: unknown executor {name!r} (registered executors: {registered})")
    return DeclarationError(
        f"{where}: executor {name!r} is not configured in {config.source or 'the configuration'}: "
        f"add an [executor.{name}] table (configured executors: {configured})"
    )


def sync_declared(
    config: Config, manager: PluginManager, store: Store, executors: dict[str, Executor]
) -> list[SyncReport]:
    """Import each module of ``[scheduler] jobs`` and sync its declared jobs into ``store``.

    :raises DeclarationError: for a job whose executor this node does not run, or whose target the
        executor refuses
    """
    reports = []
    for module in config.scheduler.jobs:
        jobs = declared_in(module)
        for job in jobs:
            executor = executors.get(job.spec.executor)
            if executor is None:
                raise unconfigured_executor(config, manager, job)
            executor.validate_target(job.spec.target, job.spec.arguments)
        reports.append(sync_module(store, module, jobs, manager))
    return reports
