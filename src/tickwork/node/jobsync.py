"""The jobs a node declares in code (``[scheduler] jobs``), checked against the executors it runs
and synced into the store at start-up."""

from __future__ import annotations

from ..abc import Executor, Store
from ..config.files import Config
from ..errors import DeclarationError, did_you_mean
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
        names = sorted(manager.executors.names())
        registered = ", ".join(names)
        # A near miss of a configured or registered name is most likely a typo of it.
        hint = did_you_mean(name, [*sorted({*config.executors, config.scheduler.default_executor}), *names])
        return DeclarationError(f"{where}: unknown executor {name!r}{hint} (registered executors: {registered})")
    return DeclarationError(
        f"{where}: executor {name!r} is not configured in {config.source or 'the configuration'}: "
        f"add an [executor.{name}] table (configured executors: {configured})"
    )


def declared_jobs(
    config: Config, manager: PluginManager, executors: dict[str, Executor]
) -> list[tuple[str, list[DeclaredJob]]]:
    """Import each module of ``[scheduler] jobs`` and check its declared jobs against the
    executors this node runs. Needs no store: a node does this before it opens (or creates) its
    database, so a module that fails to import leaves no database file behind.

    :return: each module with its declared jobs, in ``[scheduler] jobs`` order
    :raises DeclarationError: for a module that cannot be imported, a job whose executor this
        node does not run, or whose target the executor refuses
    """
    found = []
    for module in config.scheduler.jobs:
        jobs = [job.in_namespace(config.scheduler.namespace) for job in declared_in(module)]
        for job in jobs:
            executor = executors.get(job.spec.executor)
            if executor is None:
                raise unconfigured_executor(config, manager, job)
            executor.validate_target(job.spec.target, job.spec.arguments)
        found.append((module, jobs))
    return found


def sync_declared(
    config: Config,
    manager: PluginManager,
    store: Store,
    executors: dict[str, Executor],
    declared: list[tuple[str, list[DeclaredJob]]] | None = None,
) -> list[SyncReport]:
    """Sync the declared jobs (``declared``, else :func:`declared_jobs` now) into ``store``.

    :raises DeclarationError: as :func:`declared_jobs`
    """
    if declared is None:
        declared = declared_jobs(config, manager, executors)
    return [sync_module(store, module, jobs, manager) for module, jobs in declared]
