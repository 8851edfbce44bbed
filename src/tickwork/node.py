"""Building a node from the configuration and running it until stopped."""

from __future__ import annotations

import contextlib
import logging
import secrets
import signal
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from types import FrameType
from typing import Any, TypeVar

from .abc import Executor, Membership, Store
from .config import Config, plugin_manager_for, validate_options
from .engine import Engine, EngineSettings
from .errors import ConfigError, DeclarationError, NodeIdInUseError, PluginNotFoundError
from .importerrors import function_location
from .jobs import DeclaredJob, declared_in
from .plugins import PluginManager
from .schedules import SyncReport, sync_module

log = logging.getLogger("tickwork.node")

T = TypeVar("T")

#: Seconds a node record counts as live when the membership does not say (no heartbeat TTL).
DEFAULT_NODE_TTL = 4.0


def _located(where: str, build: Callable[[], T]) -> T:
    """Run ``build``; prefix configuration errors with the file and table they come from."""
    try:
        return build()
    except PluginNotFoundError as exc:
        raise PluginNotFoundError(exc.kind, exc.name, exc.registered, where=f"{where}.plugin") from exc
    except ConfigError as exc:
        if str(exc).startswith(where.split(":")[0]):
            raise
        raise ConfigError(f"{where}: {exc}") from exc
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def build_store(config: Config, manager: PluginManager, **extra: Any) -> Store:
    where = config.where("store")

    def build() -> Store:
        cls = manager.stores.get(config.store.plugin)
        return cls(**validate_options(where, config.store.options, cls.options), **extra)

    return _located(where, build)


def build_membership(config: Config, manager: PluginManager) -> Membership:
    where = config.where("membership")

    def build() -> Membership:
        cls = manager.memberships.get(config.membership.plugin)
        return cls(**validate_options(where, config.membership.options, cls.options))

    return _located(where, build)


def build_executors(config: Config, manager: PluginManager) -> dict[str, Executor]:
    """Every configured executor, plus the default one even when it has no table."""
    wanted = dict(config.executors)
    wanted.setdefault(config.scheduler.default_executor, {})
    executors: dict[str, Executor] = {}
    for name, options in wanted.items():
        where = config.where(f"executor.{name}")

        def build(name: str = name, options: dict[str, Any] = options, where: str = where) -> Executor:
            cls = manager.executors.get(name)
            return cls(**validate_options(where, options, cls.options))

        executors[name] = _located(where, build)
    return executors


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


class Node:
    """A tickwork node: store + membership + executors + engine, built from a :class:`Config`.

    :param store: override the configured store (tests inject one with a fake clock)
    :param clock: tests only: the engine's "now" when computing next fire times
    """

    def __init__(
        self,
        config: Config,
        *,
        manager: PluginManager | None = None,
        store: Store | None = None,
        executors: dict[str, Executor] | None = None,
        membership: Membership | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.config = config
        self.manager = manager or plugin_manager_for(config)
        self.store = store or build_store(config, self.manager)
        self.membership = membership or build_membership(config, self.manager)
        self.executors = executors if executors is not None else build_executors(config, self.manager)
        s = config.scheduler
        self.node_id = s.node_id
        self.engine = Engine(
            self.store,
            self.executors,
            self.membership,
            EngineSettings(
                node_id=s.node_id,
                batch_size=getattr(self.store, "batch_size", 100),
                max_in_flight=s.max_in_flight,
                max_sleep=s.max_sleep,
                misfire=s.misfire,
                misfire_grace=s.misfire_grace,
                hard_timeout_grace=s.hard_timeout_grace,
                reap_interval=s.reap_interval,
                renew_interval=s.renew_interval,
                lookahead=s.lookahead,
                history_retention=timedelta(days=s.history_retention_days) if s.history_retention_days else None,
            ),
            clock=clock,
            manager=self.manager,
        )
        self._started = False
        #: A token of this process, recorded with the node id (see :meth:`Store.register_node`).
        self.instance = secrets.token_hex(8)

    def start(self) -> list[SyncReport]:
        """Open the store, clear this node's stale claims, sync declared jobs, start the parts."""
        self.store.open()
        # Before anything else: releasing "this node's" claims would release a live namesake's.
        self._register()
        try:
            return self._start_registered()
        except BaseException:
            # A failed start (a bad job module, ...) must not leave a record that makes the next
            # start wait for it to go stale.
            with contextlib.suppress(Exception):
                self.store.remove_node(self.node_id)
            raise

    def _start_registered(self) -> list[SyncReport]:
        released = self.store.release_node(self.node_id, f"node {self.node_id} restarted; run abandoned")
        if released:
            log.warning("released %d claim(s) this node (%s) left behind", released, self.node_id)
        reports = self.sync_jobs()
        for executor in self.executors.values():
            executor.start()
        self.membership.start(self.store, self.node_id)
        self.membership.on_change(self.engine.wake)
        self.store.listen(self.engine.wake)
        self._started = True
        return reports

    def _register(self) -> None:
        """Record this process under the node id, unless a live process uses it. A record whose
        heartbeat is fresh but no longer advances is a predecessor that crashed (a restart with a
        fixed id): wait for it to go stale, at most ``node_ttl``. One that advances is live."""
        ttl = float(getattr(self.membership, "node_ttl", DEFAULT_NODE_TTL))
        live = self.store.register_node(self.node_id, self.instance, ttl)
        if live is None:
            return
        seen = live.heartbeat_at
        deadline = time.monotonic() + ttl
        while live is not None and live.heartbeat_at == seen and time.monotonic() < deadline:
            time.sleep(min(0.25, ttl / 8))
            live = self.store.register_node(self.node_id, self.instance, ttl)
        if live is not None:
            raise NodeIdInUseError(
                f"node id {self.node_id!r} is in use by a live node (it is heartbeating); give each node "
                "its own scheduler.node_id"
            )

    def sync_jobs(self) -> list[SyncReport]:
        reports = []
        for module in self.config.scheduler.jobs:
            jobs = declared_in(module)
            for job in jobs:
                executor = self.executors.get(job.spec.executor)
                if executor is None:
                    raise unconfigured_executor(self.config, self.manager, job)
                executor.validate_target(job.spec.target, job.spec.arguments)
            reports.append(sync_module(self.store, module, jobs, self.manager))
        return reports

    def run(self, duration: float | None = None, *, install_signals: bool = True) -> None:
        """Start (if needed) and run until SIGINT/SIGTERM, :meth:`stop` or ``duration`` seconds."""
        previous: dict[signal.Signals, Any] = {}
        if install_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, self._on_signal)
        if not self._started:
            try:
                self.start()
            except BaseException:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
                raise
        log.info(
            "node %s running (store %s, membership %s)",
            self.node_id,
            self.config.store.plugin,
            self.config.membership.plugin,
        )
        try:
            until = None if duration is None else time.monotonic() + duration
            self.engine.run_forever(until)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.shutdown()

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        log.info("received %s; stopping after running jobs end", signal.Signals(signum).name)
        self.stop()

    def stop(self) -> None:
        self.engine.stop()

    def shutdown(self, timeout: float = 30.0) -> None:
        """Graceful stop: no new claims; wait for running jobs, record them, leave the cluster."""
        if not self._started:
            self.store.close()
            return
        self._started = False
        # Errors are logged by the engine; the store may be gone (the next start releases then).
        with contextlib.suppress(Exception):
            self.engine.shutdown(timeout)
        for executor in self.executors.values():
            executor.shutdown(wait=False)
        try:
            # Whatever happened before (a lost answer, an end that could not be written), this
            # node leaves nothing claimed: one statement when there is nothing to release.
            released = self.store.release_node(self.node_id, f"node {self.node_id} stopped before the run ended")
            if released:
                log.warning("released %d claim(s) at shutdown", released)
        except Exception:
            log.exception("could not release claims at shutdown")
        self.membership.stop()
        self.store.close()
        log.info("node %s stopped (%d fired, %d finished)", self.node_id, self.engine.fired, self.engine.finished)
