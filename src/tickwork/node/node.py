"""Building a node from the configuration; :class:`Node`, the public way to run one (the
``tickwork run`` command, or embedded in an application: docs/embedding.md)."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import secrets
import shlex
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from ..abc import Executor, Membership, Store
from ..config.calendars import use_calendars
from ..config.files import Config, check_tables, config_from
from ..engine import Engine, EngineSettings
from ..errors import ConfigError
from ..plugin.assembly import build_executors, build_membership, build_store
from ..plugin.lifecycle import LifecycleHooks
from ..plugin.manager import PluginManager, plugin_manager_for
from ..scheduling.declare import DeclaredJob
from ..scheduling.sync import SyncReport
from .banner import log_banner
from .embedding import AsyncEmbedding
from .hooklistener import HookListener
from .jobsync import declared_jobs, sync_declared
from .joining import join
from .process import hold_gc, tune_gc
from .registration import Registration
from .shutdown import leave
from .signals import StopSignals
from .status import NodeStatus

if TYPE_CHECKING:
    from ..admin.api import Admin
    from .healthwatch import HealthWatch

log = logging.getLogger("tickwork.node")

T = TypeVar("T")


class Node(NodeStatus, AsyncEmbedding):
    """A tickwork node: store + membership + executors + engine, built from a :class:`Config`.

    Run it in the foreground with :meth:`run` (what ``tickwork run`` does), or embedded in an
    application: :meth:`start` runs it in a background thread and :meth:`stop` ends it; ``with``
    and ``async with`` do both::

        async with tickwork.Node.from_config("tickwork.toml") as node:
            ...

    An embedded node leaves logging, signals and the event loop to the application.

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
        # Its schedules' ``holidays`` may name the configuration's [calendars.NAME] tables.
        use_calendars(config.calendars)
        self.store = store or build_store(config, self.manager)
        self.membership = membership or build_membership(config, self.manager)
        self.executors = executors if executors is not None else build_executors(config, self.manager)
        self.hooks = LifecycleHooks(self.manager)
        # A plugin's table read for other plugins than this node runs with would be ignored.
        check_tables(config, self.manager.config_tables)
        s = config.scheduler
        self.node_id = s.node_id
        self.engine = Engine(
            self.store,
            self.executors,
            self.membership,
            EngineSettings.of(s, batch_size=self.store.batch_size),
            clock=clock,
            listener=HookListener(self.hooks, s.node_id),
            manager=self.manager,
        )
        #: A token of this process, recorded with the node id (see :meth:`Store.register_node`).
        self.instance = secrets.token_hex(8)
        self._opened = False
        self._thread: threading.Thread | None = None
        self._looping = False
        self._stopped = threading.Event()
        self._abort = threading.Event()
        ttl = self.membership.node_ttl
        self._registration = Registration(self.store, self.node_id, self.instance, ttl)
        self._abandoned = self._registration.abandoned
        self._signals = StopSignals(self.request_stop, self._stop_now)
        self._health_watch: HealthWatch | None = None
        self._grace: float | None = None
        self._admin: Admin | None = None

    @classmethod
    def from_config(cls, source: str | os.PathLike[str] | Mapping[str, Any] | None = None, /, **overrides: Any) -> Node:
        """Build a node from a config file (``None``: ``$TICKWORK_CONFIG``, then ``./tickwork.toml``,
        then the defaults, as the CLI finds it) or from a dict shaped like the TOML.

        A keyword override is a ``[scheduler]`` key (``node_id="web-1"``, ``jobs=["myapp.jobs"]``) or
        a table given as a dict, which updates the file's (``store={"path": ...}``,
        ``metrics={"port": 0}``: any table of the core or of a loaded plugin). An unknown name is
        refused with the closest known one, as in a file.

        :raises tickwork.ConfigError: naming the file and key at fault
        """
        return cls(config_from(source, overrides))

    # -- starting ---------------------------------------------------------------------------------

    def open(self) -> list[SyncReport]:
        """Open the store, clear this node's stale claims, sync declared jobs and start the parts,
        without running the engine loop (tests and ``tickwork bench`` step the engine themselves).

        :raises RuntimeError: if the node was stopped before (a node runs once: build a new one)
        """
        if self._stopped.is_set():
            raise RuntimeError(f"node {self.node_id} was stopped; build a new Node to run again")
        # The job modules first: one that fails to import must not leave a new database behind.
        declared = declared_jobs(self.config, self.manager, self.executors)
        reports = join(self, self._registration, declared)
        self._opened = True
        try:
            self.membership.on_change(self._membership_changed)
            self.store.listen(self.engine.wake)
            log_banner(self, reports)
            # A plugin's configuration error fails the start; anything else it raises is only logged.
            self.hooks.call(
                "tickwork_node_started", node_id=self.node_id, config=self.config, node=self, reraise=(ConfigError,)
            )
            self._membership_changed()
            self._watch_health()
        except BaseException:
            # Also for a KeyboardInterrupt in a slow plugin: a half-started node would keep
            # heartbeating under its id, and a retry would be refused as a namesake.
            self.shutdown(0)
            raise
        return reports

    def _watch_health(self) -> None:
        """Sweep schedule health for ``tickwork_health_changed``, only if a plugin asks for it."""
        if self.hooks.implemented("tickwork_health_changed") and self.hooks.wanted(
            "tickwork_watch_health", node_id=self.node_id, config=self.config
        ):
            from .healthwatch import HealthWatch  # imports the admin API, like admin below

            self._health_watch = HealthWatch.reporting_to_hooks(self)

    def sync_jobs(self, declared: list[tuple[str, list[DeclaredJob]]] | None = None) -> list[SyncReport]:
        """Sync the jobs declared in ``[scheduler] jobs`` into the store (:func:`.jobsync.sync_declared`;
        ``declared``: what :func:`.jobsync.declared_jobs` found, else it is asked now)."""
        return sync_declared(self.config, self.manager, self.store, self.executors, declared)

    def start(self) -> Node:
        """Open the node and run it in a background thread; returns once it runs.

        :raises RuntimeError: if it is already running
        :raises tickwork.TickworkError: when the store cannot be opened, a job module not imported, ...
        """
        if self._looping:
            raise RuntimeError(f"node {self.node_id} is already running")
        if not self._opened:
            self.open()
        self._looping = True
        self._thread = threading.Thread(target=self._background, name=f"tickwork-node-{self.node_id}", daemon=True)
        self._thread.start()
        # An application that exits without stopping the node must not leave it listed as alive,
        # its schedules shown running until other nodes notice: stop it on the way out.
        atexit.register(self.stop)
        return self

    def _background(self) -> None:
        try:
            self.engine.run_forever()
        except Exception:  # the engine survives store errors; this is a bug, not an outage
            log.exception("node %s: the engine loop ended unexpectedly", self.node_id)
        finally:
            try:
                self.shutdown(self._grace)
            finally:
                self._looping = False

    def run(self, duration: float | None = None, *, install_signals: bool = True, tune_process: bool = False) -> None:
        """Run in this thread until SIGINT/SIGTERM, :meth:`stop` or ``duration`` seconds, then stop
        gracefully. A second SIGINT/SIGTERM while stopping stops at once.

        :param tune_process: the process is this node's own (``tickwork run``): hold the
            process-wide garbage collector while the node opens (:func:`.process.hold_gc`), then
            tune it for the node (:func:`.process.tune_gc`).
            Off by default: a node run inside an application leaves the application's collector
            alone.
        """
        if install_signals:
            self._signals.install()
        self._looping = True
        try:
            if tune_process:
                hold_gc()
            try:
                if not self._opened:
                    self.open()
            finally:
                if tune_process:
                    tune_gc()
            until = None if duration is None else time.monotonic() + duration
            self.engine.run_forever(until)
        finally:
            try:
                self.shutdown(self._grace)
            finally:
                self._looping = False
                self._signals.restore()

    # -- stopping ---------------------------------------------------------------------------------

    def _stop_now(self) -> None:
        self._abort.set()
        self.engine.stop()

    def request_stop(self) -> None:
        """Ask the node to stop (safe from a signal handler); it stops as :meth:`stop` describes."""
        self.engine.stop()

    def stop(self, timeout: float | None = None) -> None:
        """Stop claiming, wait up to ``timeout`` seconds (default ``[scheduler] shutdown_grace``)
        for running jobs and record them, give back claims, leave the cluster, close the store.
        Runs still going after ``timeout`` are recorded ``abandoned``. Returns once stopped."""
        self._grace = timeout
        self.engine.stop()
        atexit.unregister(self.stop)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
            self._thread = None
        elif self._looping:
            if thread is None:  # run() in another thread: it shuts down
                self._stopped.wait()
        elif self._opened:
            self.shutdown(timeout)

    def shutdown(self, timeout: float | None = None) -> None:
        """Graceful stop of an opened node (see :meth:`stop`), in this thread."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            self.stop(timeout)  # the loop's own thread shuts down; two at once would race
            return
        if not self._opened:
            self.store.close()
            self._stopped.set()
            return
        self._opened = False
        grace = self.config.scheduler.shutdown_grace if timeout is None else timeout
        self.engine.stop()
        if self._health_watch is not None:
            self._health_watch.stop()
        self.hooks.call("tickwork_node_stopping", node_id=self.node_id)
        leave(self, grace, self._abort, announce_signals=self._signals.installed)
        if self._admin is not None:
            self._admin.close()
        self.hooks.call("tickwork_node_stopped", node_id=self.node_id)
        # Two counts that differ without anything lost (a retry is taken once more, a run still
        # going at the stop is recorded when its claim is released): said so, and where to look.
        log.info(
            "node %s stopped: it took %d fire(s) (a retry counts once more) and recorded the end of %d; "
            "every run is in the history (tickwork history%s --node %s)",
            self.node_id,
            self.engine.fired,
            self.engine.finished,
            config_option(self.config),
            shlex.quote(self.node_id),
        )
        self._stopped.set()

    # -- embedding --------------------------------------------------------------------------------

    @property
    def admin(self) -> Admin:
        """The admin API (what :func:`tickwork.connect` returns) on this node's configuration:
        ``node.admin.add(...)``, ``node.admin.history(...)``. It has its own connections, closed
        when the node stops; like any ``Admin`` it is not thread-safe (give other threads their
        own ``tickwork.connect()``)."""
        if self._admin is None:
            from ..admin.api import Admin  # admin builds stores with this module's helpers

            self._admin = Admin(self.config, manager=self.manager)
        return self._admin

    def _membership_changed(self) -> None:
        self.engine.wake()
        if self.hooks.implemented("tickwork_membership_changed"):
            owned = self.membership.owned_buckets()
            self.hooks.call(
                "tickwork_membership_changed",
                node_id=self.node_id,
                members=self.members(),
                owned=None if owned is None else list(owned),
            )

    def __enter__(self) -> Node:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def config_option(config: Config) -> str:
    """`` -c FILE`` for a command to reach this configuration's store, when the CLI would not
    find the file by itself (it reads ``./tickwork.toml`` of the directory it runs in); empty for
    that file and for the defaults. The hint a log line gives must work when pasted."""
    if config.source is None:
        return ""
    source = Path(config.source)
    with contextlib.suppress(OSError):
        if source.resolve() == (Path.cwd() / "tickwork.toml").resolve():
            return ""
    return f" -c {shlex.quote(str(source))}"
