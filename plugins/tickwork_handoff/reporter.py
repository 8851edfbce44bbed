"""The worker side of a hand-off: what a queue's worker did with a message, in tickwork's history.

Each report is one fenced status change of the run the message's headers name
(:meth:`tickwork.abc.Store.report_handoff`): ``started`` only from ``submitted`` (or ``abandoned``:
the node died after publishing, so the message is the only trace of the fire), then ``succeeded``,
``failed`` or back to ``submitted`` (a retry) only from ``started``. So a message delivered twice
runs once: the second delivery finds the run started or ended and is refused.

The worker finds tickwork's database in a tickwork configuration: the path or dict given to the
integration's ``install()``, else ``$TICKWORK_CONFIG``, else ``./tickwork.toml`` (as the CLI). With an
``[otel]`` table there, the worker records a span per task in the trace the message carries
(:mod:`tickwork_otel.worker`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

from tickwork.abc import Store
from tickwork.plugin.runcontext import RunContext
from tickwork.structures import RunStatus

log = logging.getLogger("tickwork.handoff")

_WAITING = frozenset({RunStatus.SUBMITTED, RunStatus.ABANDONED})
_STARTED = frozenset({RunStatus.STARTED})
LOST = (
    "the worker that started it was lost before it reported; its message was delivered again and not run a second time"
)

ConfigSource = str | os.PathLike[str] | Mapping[str, Any] | None


class Reporter:
    """Records a worker's progress on handed-off runs in ``store``.

    :param wait_for_node: seconds :meth:`begin` waits for the node to record the hand-off (a
        worker may take the message before the node wrote ``submitted``, or after the node died
        and before another node released its claims)
    """

    def __init__(self, store: Store, *, wait_for_node: float = 30.0, poll: float = 0.2) -> None:
        self.store = store
        self.wait_for_node = wait_for_node
        #: The longest pause between two looks while waiting; the first ones are much shorter (a
        #: node records its hand-off within milliseconds, a dead node's release takes seconds).
        self.poll = poll

    def begin(
        self, context: RunContext, *, retry: bool = False, redelivered: bool = False, worker: str | None = None
    ) -> bool:
        """Mark the run ``started``; False when this delivery must not run (it ran, or ended).

        :param retry: the message is the queue's own retry of the run (it may arrive before the
            retrying worker moved the run back to ``submitted``)
        :param redelivered: the broker says the message was delivered before: a ``started`` run
            then lost its worker, and is recorded ``failed``
        :param worker: the queue's name for the worker taking the message (``celery@host``, ...):
            the run's :attr:`~tickwork.structures.RunRecord.worker` once the start lands (a
            refused start does not write it, so a redelivery never renames the worker that ran it)
        """
        deadline = time.monotonic() + self.wait_for_node
        pause = 0.005
        while True:
            landed, status = self.store.report_handoff(
                context.run_id, RunStatus.STARTED, expect=_WAITING, worker=worker
            )
            if landed:
                return True
            # Running: the node has not recorded the hand-off yet. Submitted or abandoned: it
            # changed between the update and the read of its status (try again at once).
            waiting = status is RunStatus.RUNNING or status in _WAITING or (retry and status is RunStatus.STARTED)
            if not waiting or time.monotonic() >= deadline:
                break
            time.sleep(pause)
            pause = min(pause * 2, self.poll)
        if status is RunStatus.STARTED and redelivered:
            self.store.report_handoff(context.run_id, RunStatus.FAILED, expect=_STARTED, error=LOST)
        log.warning(
            "tickwork: not running %s scheduled for %s (run %d, attempt %d): the run is %s",
            context.schedule,
            context.scheduled_for.isoformat(),
            context.run_id,
            context.attempt,
            "unknown" if status is None else status.value,
        )
        return False

    def succeeded(self, context: RunContext) -> None:
        self._end(context, RunStatus.SUCCEEDED, None)

    def failed(self, context: RunContext, error: str) -> None:
        self._end(context, RunStatus.FAILED, error)

    def lost(self, context: RunContext, reason: str) -> None:
        """The queue says the worker running the run died (RQ's ``AbandonedJobError``, a work horse
        killed): ``failed`` from ``started``, with the queue's own words."""
        self._end(context, RunStatus.FAILED, f"the worker running it was lost: {reason}")

    def retrying(self, context: RunContext, reason: str) -> None:
        """The queue will deliver the run again: back to ``submitted``, the reason noted."""
        self._end(context, RunStatus.SUBMITTED, f"retried by the worker: {reason}")

    def _end(self, context: RunContext, status: RunStatus, error: str | None) -> None:
        # A report that cannot be written must not change what the task did: it is logged, and
        # the run ends timed_out after report_timeout.
        try:
            landed, now = self.store.report_handoff(context.run_id, status, expect=_STARTED, error=error)
        except Exception:
            log.exception("tickwork: cannot record %s for run %d of %s", status.value, context.run_id, context.schedule)
            return
        if not landed:
            log.warning(
                "tickwork: %s of run %d of %s not recorded: the run is already %s",
                status.value,
                context.run_id,
                context.schedule,
                "unknown" if now is None else now.value,
            )


class ProcessReporter:
    """One :class:`Reporter` per process, made on first use: a prefork worker's children must
    not share the parent's database connections."""

    def __init__(self, config: ConfigSource = None, *, wait_for_node: float = 30.0) -> None:
        self.config = config
        self.wait_for_node = wait_for_node
        self._lock = threading.Lock()
        self._made: tuple[int, Reporter] | None = None

    def get(self) -> Reporter:
        with self._lock:
            if self._made is not None and self._made[0] != os.getpid():
                made = self._made[1]
                engine = getattr(made.store, "engine", None)
                if engine is not None and hasattr(engine, "dispose"):
                    # A forked child (an RQ work horse, a prefork child): the parent's store, with a
                    # fresh connection pool (close=False leaves the parent's connections alone).
                    engine.dispose(close=False)
                    self._made = (os.getpid(), made)
                else:
                    self._made = None
            if self._made is None:
                from tickwork.admin import connect  # deferred: the worker imports this before forking

                admin = connect(self.config)
                self._made = (os.getpid(), Reporter(admin.store(write=True), wait_for_node=self.wait_for_node))
                # The worker's spans, when the configuration has an [otel] table (OpenTelemetry
                # is imported only then).
                from tickwork_otel.worker import enable

                enable(admin.config)
            return self._made[1]
