"""Hook implementations of the ``sentry`` plugin.

It does nothing unless the node's config has a ``[sentry]`` table; then each run sends Sentry
Crons check-ins through sentry-sdk's own API (``sentry_sdk.crons.capture_checkin``):
``in_progress`` when it starts, ``ok`` or ``error`` (with its duration) when it ends, and an
``error`` check-in for a fire recorded ``skipped``. Every check-in carries the monitor config
built from the schedule, so Sentry creates and updates the monitors itself. See docs/sentry.md.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tickwork.config import Config, ConfigTables
from tickwork.errors import ConfigError, ScheduleNotFoundError
from tickwork.plugin import hookimpl
from tickwork.structures import Finish, JobCall, RunStatus, ScheduleSpec, SkippedFire

from .monitors import check_in_id, monitor_config, monitored, monitored_name, slug
from .settings import SentryConfig

if TYPE_CHECKING:
    from tickwork.abc import RunningNode

log = logging.getLogger("tickwork.sentry")


class CheckIns:
    """The check-ins of one node, built and handed to sentry-sdk from a thread of their own: the
    hooks run on the engine's thread, and a start or a skip names only the schedule, whose spec
    (for the monitor config) may have to be read from the store. Specs come with every end
    (``Finish.claim.spec``); otherwise the last one seen is used, or it is read once."""

    def __init__(self, node: RunningNode, settings: SentryConfig) -> None:
        from sentry_sdk.crons import capture_checkin

        self._capture = capture_checkin
        self._node = node
        self._settings = settings
        self._specs: dict[tuple[str, str], ScheduleSpec] = {}
        self._lock = threading.Lock()
        self._stopped = False
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="tickwork-sentry", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while (work := self._queue.get()) is not None:
            self._do(work)

    @staticmethod
    def _do(work: Callable[[], None]) -> None:
        try:
            work()
        except Exception as exc:  # a store or SDK error loses check-ins, never the thread
            log.warning("sentry: a check-in was not sent: %s", exc)

    def submit(self, work: Callable[[], None]) -> None:
        with self._lock:
            inline = self._stopped
            if not inline:
                self._queue.put(work)
        if inline:
            # The node is stopping: the ends and skips it records meanwhile are few, and their
            # specs must be read before it closes its store.
            self._do(work)

    def stop(self, timeout: float = 10.0) -> None:
        """Send what is queued (for at most ``timeout`` seconds) while the store is still open,
        then end the thread; what is submitted afterwards is sent at once, on the caller's thread."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            self._queue.put(None)
        self._thread.join(timeout)

    def _spec(self, name: str, namespace: str) -> ScheduleSpec | None:
        with self._lock:
            found = self._specs.get((namespace, name))
        if found is None:
            try:
                found = self._node.store.get(name, namespace=namespace).spec
            except ScheduleNotFoundError:  # removed meanwhile
                return None
            with self._lock:
                self._specs[(namespace, name)] = found
        return found

    def _send(self, spec: ScheduleSpec, check_in: str, status: str, duration: float | None = None) -> None:
        self._capture(
            monitor_slug=slug(monitored(spec), self._settings.slug_prefix),
            check_in_id=check_in,
            status=status,
            duration=duration,
            monitor_config=monitor_config(spec, self._settings.checkin_margin),  # type: ignore[arg-type]
        )

    def started(self, runs: Sequence[JobCall]) -> None:
        for run in runs:
            spec = self._spec(run.schedule, run.namespace)
            if spec is not None:
                self._send(
                    spec,
                    check_in_id(monitored_name(run.schedule, run.namespace), run.scheduled_for, run.attempt),
                    "in_progress",
                )

    def finished(self, results: Sequence[Finish]) -> None:
        for result in results:
            claim = result.claim
            with self._lock:
                self._specs[claim.spec.key] = claim.spec
            duration = None
            if result.started_at is not None and result.finished_at is not None:
                duration = max(0.0, (result.finished_at - result.started_at).total_seconds())
            status = "ok" if result.outcome.status is RunStatus.SUCCEEDED else "error"
            self._send(
                claim.spec, check_in_id(monitored(claim.spec), claim.scheduled_for, claim.attempt), status, duration
            )

    def skipped(self, fires: Sequence[SkippedFire]) -> None:
        # Sentry takes no "missed" status from clients (it derives missed check-ins from the
        # monitor's schedule and margin): a skipped fire is an error check-in of its own, so the
        # monitor shows it at once and not only after the margin.
        for fire in fires:
            spec = self._spec(fire.schedule, fire.namespace)
            if spec is not None:
                self._send(
                    spec,
                    check_in_id(monitored_name(fire.schedule, fire.namespace), fire.scheduled_for, 0),
                    "error",
                    0.0,
                )


_lock = threading.Lock()
_nodes: dict[str, CheckIns] = {}


@hookimpl
def tickwork_add_config(tables: ConfigTables) -> None:
    tables.add(SentryConfig)


@hookimpl
def tickwork_node_started(node_id: str, config: Config, node: RunningNode) -> None:
    settings = config.find_table(SentryConfig)
    if settings is None:
        return
    try:
        import sentry_sdk
    except ImportError as exc:
        raise ConfigError(
            f"{config.where('sentry')}: needs sentry-sdk: pip install 'tickwork[sentry]' ({exc})"
        ) from exc
    if not sentry_sdk.get_client().is_active():
        # A client for check-ins only: sentry-sdk's logging integration would turn every failed
        # run's ERROR record into an event, and its tracing integrations add nothing to check-ins.
        # An application that wants those initialises sentry-sdk itself (see docs/sentry.md).
        options: dict[str, Any] = {"default_integrations": False, "auto_enabling_integrations": False}
        if settings.dsn is not None:
            options["dsn"] = settings.dsn
        if settings.environment is not None:
            options["environment"] = settings.environment
        sentry_sdk.init(**options)
        if not sentry_sdk.get_client().is_active():
            raise ConfigError(f"{config.where('sentry')}.dsn: not set, and $SENTRY_DSN is not set either")
    with _lock:
        _nodes[node_id] = CheckIns(node, settings)
    log.info("node %s sends Sentry Crons check-ins", node_id)


@hookimpl
def tickwork_runs_started(node_id: str, runs: Sequence[JobCall]) -> None:
    found = _nodes.get(node_id)
    if found is not None:
        found.submit(lambda: found.started(runs))


@hookimpl
def tickwork_runs_finished(node_id: str, results: Sequence[Finish]) -> None:
    found = _nodes.get(node_id)
    if found is not None:
        found.submit(lambda: found.finished(results))


@hookimpl
def tickwork_fires_skipped(node_id: str, skipped: Sequence[SkippedFire]) -> None:
    found = _nodes.get(node_id)
    if found is not None:
        found.submit(lambda: found.skipped(skipped))


@hookimpl
def tickwork_node_stopping(node_id: str) -> None:
    # Before the node closes its store: the queued check-ins may still have to read a spec.
    found = _nodes.get(node_id)
    if found is not None:
        found.stop()


@hookimpl
def tickwork_node_stopped(node_id: str) -> None:
    with _lock:
        found = _nodes.pop(node_id, None)
    if found is not None:
        import sentry_sdk

        found.stop()
        sentry_sdk.flush(timeout=5)  # the last check-ins before the process may exit
