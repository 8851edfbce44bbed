"""The base of the hand-off executors: a fire becomes a message on another system's queue.

The scheduler only *submits* (the Docspell rule): :meth:`submit` queues the fire and returns, and
the executor's publishing threads take the queued fires in batches (every fire queued when a
thread is free, at most :data:`MOST_PER_BATCH`): for a batch, one look in the store for the
schedules whose previous hand-off is not final, then one publish of all its messages on the
thread's long-lived broker connection, the broker's confirmations collected once for the batch.
A run ends ``submitted`` (handed off: the broker confirmed its message), ``skipped`` (the
previous hand-off is still ``submitted`` or ``started``) or ``failed`` (the broker refused or did
not answer: a failed attempt, retried under the schedule's ``retries``, the broker's error in the
history). Nothing a broker or a target does can raise into the engine. The worker-side
integration (:mod:`.reporter`) records what the worker did with the message.

Exactly once across a broken batch: a message whose confirmation did not come may still have
reached the broker. The publishers send it again with the same id (the fire's), and the worker
side runs a message only if it moves the run from ``submitted`` to ``started`` (one fenced
update): of two copies, one runs and the other is refused; a copy of a run recorded ``failed``
(its publish gave up) is refused as well. See docs/handoff.md#batches.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from tickwork.abc import Executor
from tickwork.config import Section
from tickwork.errors import ExecutorError
from tickwork.plugin import tracing
from tickwork.plugin.calls import ReportOnce
from tickwork.structures import (
    HANDOFF_BLOCKED,
    HANDOFF_STUCK,
    JobCall,
    Outcome,
    RunRecord,
    RunStatus,
    ScheduleKey,
    handoff_stuck,
    iso_z,
)

from .identity import headers, message_id_of
from .nodes import store_of
from .settings import HandoffSettings

log = logging.getLogger("tickwork.handoff")

#: The most fires one publishing thread takes at once: a batch is one store look and one
#: confirmation wait; larger batches would hold the first fires of a large minute back while
#: the last ones are built.
MOST_PER_BATCH = 1000


@dataclass(frozen=True)
class Message:
    """One fire's message, as :meth:`HandoffExecutor.publish` sends it."""

    call: JobCall
    #: The fire's identity (:func:`~tickwork_handoff.identity.message_id_of`): the message's id.
    id: str
    #: The fire's headers (:func:`~tickwork_handoff.identity.headers`) and the trace context.
    headers: dict[str, str]


#: What :meth:`HandoffExecutor.publish` returns per message: a short description for the log
#: (queue, task), or the exception that failed it.
Published = str | Exception


class HandoffExecutor(Executor):
    """Publishes runs as messages, in batches; subclasses say how (:meth:`publish`).

    :param options: the keys of the subclass's :attr:`section`, which extends
        :class:`~tickwork_handoff.settings.HandoffSettings` (``report_timeout``: seconds after its
        hand-off, or its start on a worker, a run that no worker reported on stops blocking its
        schedule and is recorded ``timed_out``; ``pickup_timeout``: seconds after its hand-off a
        run no worker started is marked stuck, by :mod:`.pickup`; ``no_overlap``,
        ``publish_timeout``, ``threads``)
    """

    #: The executor's name in messages (``celery``, ``rq``, ``dramatiq``).
    name: ClassVar[str] = "handoff"
    hands_off: ClassVar[bool] = True
    #: How the workers get the worker-side integration, for the stuck hand-off warning.
    worker_side: ClassVar[str] = "the worker-side integration of docs/handoff.md"
    section: ClassVar[type[Section]] = HandoffSettings
    settings: HandoffSettings

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.report_timeout = self.settings.report_timeout
        self.pickup_timeout = self.settings.pickup_timeout
        self.publish_timeout = self.settings.publish_timeout
        self.no_overlap = self.settings.no_overlap
        self.threads = self.settings.threads
        self._ready = threading.Condition()
        self._queued: collections.deque[tuple[JobCall, ReportOnce]] = collections.deque()
        self._publishers: list[threading.Thread] = []
        self._started = False
        self._closed = False

    # -- what a subclass provides ------------------------------------------------------------------

    @abstractmethod
    def connect(self) -> None:
        """Load the application or broker (called by :meth:`start`).

        :raises tickwork.errors.ConfigError: if it cannot be loaded
        """

    @abstractmethod
    def publish(self, messages: Sequence[Message]) -> list[Published]:
        """Publish ``messages`` and return once the broker confirmed each one or it failed (at
        most about :attr:`publish_timeout` seconds). Each publishing thread calls it with its own
        batches, so a subclass may keep a broker connection per thread and reuse it.

        :return: per message, in order: a short description for the log (queue, task), or the
            exception that failed it (its text is the attempt's error)
        :raises Exception: anything the client raises: every message of the batch fails with it
        """

    def disconnect(self) -> None:
        """Release the broker connections (called by :meth:`shutdown`)."""

    # -- the Executor interface --------------------------------------------------------------------

    def start(self) -> None:
        self.connect()
        with self._ready:
            self._started = True
        for k in range(self.threads):
            thread = threading.Thread(target=self._publishing, name=f"tickwork-{self.name}-{k}", daemon=True)
            self._publishers.append(thread)
            thread.start()

    def submit(self, call: JobCall, on_done: Callable[[Outcome], None]) -> None:
        report = ReportOnce(on_done, call.run_id)
        with self._ready:
            if not self._started:
                raise ExecutorError(f"{self.name} executor: submit() called before start()")
            if not self._closed:
                self._queued.append((call, report))
                self._ready.notify()
                return
        report(Outcome(RunStatus.FAILED, error=f"not handed off: the {self.name} executor is shut down"))

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        with self._ready:
            self._closed = True
            dropped = [] if wait else list(self._queued)
            if not wait:
                self._queued.clear()
            self._ready.notify_all()
        for _, report in dropped:
            report(Outcome(RunStatus.FAILED, error=f"not handed off: the {self.name} executor shut down first"))
        if wait:
            deadline = None if timeout is None else time.monotonic() + timeout
            for thread in self._publishers:
                thread.join(None if deadline is None else max(deadline - time.monotonic(), 0.0))
            if any(thread.is_alive() for thread in self._publishers):
                log.warning("%s: publishes still running at shutdown", self.name)
        self.disconnect()

    # -- the publishing threads --------------------------------------------------------------------

    def _publishing(self) -> None:
        while True:
            with self._ready:
                while not self._queued and not self._closed:
                    self._ready.wait()
                if not self._queued:  # shut down, nothing left
                    return
                batch = [self._queued.popleft() for _ in range(min(len(self._queued), MOST_PER_BATCH))]
            try:
                self._hand_off(batch)
            except BaseException as exc:  # a bug here must not leave a run without its outcome
                log.exception("%s: handing off %d runs failed", self.name, len(batch))
                for call, once in batch:  # ReportOnce: the runs already reported keep their outcome
                    self._report(call, once, Outcome(RunStatus.FAILED, error=f"not handed off: {exc!r}"))

    def _report(self, call: JobCall, once: ReportOnce, outcome: Outcome) -> None:
        # How the hand-off ended, for a tracing plugin's metrics (nothing without one).
        tracing.handed_off(call, self.name, outcome.status.value)
        once(outcome)

    def _hand_off(self, batch: list[tuple[JobCall, ReportOnce]]) -> None:
        if self.no_overlap:
            batch = self._skip_overlapping(batch)
        if not batch:
            return
        # The publish span of a tracing plugin per message (none without one), whose context the
        # message carries to the worker in its headers (W3C traceparent).
        spans = [tracing.publishing(call, self.name) for call, _ in batch]
        messages = [
            Message(call, message_id_of(call), {**headers(call), **span.__enter__()})
            for (call, _), span in zip(batch, spans, strict=True)
        ]
        try:
            results: Sequence[Published] = self.publish(messages)
            if len(results) != len(messages):
                raise ExecutorError(f"{self.name}: {len(results)} outcomes for {len(messages)} messages")
        except Exception as exc:
            # A broker outage is these attempts' failure (retried under the schedules' retries),
            # never the node's.
            results = [exc] * len(messages)
        failed = 0
        for (call, once), message, span, result in zip(batch, messages, spans, results, strict=True):
            if isinstance(result, Exception):
                failed += 1
                span.__exit__(type(result), result, result.__traceback__)
                error = f"not handed off: {type(result).__name__}: {result}"
                self._report(call, once, Outcome(RunStatus.FAILED, error=error))
            else:
                span.__exit__(None, None, None)
                self._report(call, once, Outcome(RunStatus.SUBMITTED, detail=f"message {message.id} on {result}"))
        if failed:
            first = next(r for r in results if isinstance(r, Exception))
            log.warning("%s: publishing %d of %d runs failed: %s", self.name, failed, len(messages), first)

    def _skip_overlapping(self, batch: list[tuple[JobCall, ReportOnce]]) -> list[tuple[JobCall, ReportOnce]]:
        """The fires of ``batch`` whose schedule has no pending hand-off; the others reported
        ``skipped`` (or ``failed`` when the store cannot tell)."""
        by_node: dict[str, list[ScheduleKey]] = {}
        for call, _ in batch:
            by_node.setdefault(call.node_id, []).append((call.namespace, call.schedule))
        pending: dict[tuple[str, ScheduleKey], RunRecord] = {}
        try:
            for node_id, keys in by_node.items():
                found = store_of(node_id).pending_handoffs(keys, self.report_timeout)
                pending.update(((node_id, key), run) for key, run in found.items())
        except Exception as exc:
            log.warning("%s: cannot check the previous hand-offs of %d runs: %s", self.name, len(batch), exc)
            for call, once in batch:
                error = f"not handed off: cannot check the previous hand-off: {exc}"
                self._report(call, once, Outcome(RunStatus.FAILED, error=error))
            return []
        free: list[tuple[JobCall, ReportOnce]] = []
        # Earliest fire first: of two fires of one schedule in this batch, the later one waits
        # behind the earlier (its hand-off is not final either), as it would in two batches.
        ahead: dict[tuple[str, ScheduleKey], JobCall] = {}
        for call, once in sorted(batch, key=lambda item: item[0].scheduled_for):
            key = (call.node_id, (call.namespace, call.schedule))
            run = pending.get(key)
            if run is None:
                earlier = ahead.get(key)
                if earlier is not None:
                    error = (
                        f"{HANDOFF_BLOCKED}(run {earlier.run_id}, scheduled for {iso_z(earlier.scheduled_for)}) "
                        "is being handed off in the same batch"
                    )
                    self._report(call, once, Outcome(RunStatus.SKIPPED, error=error))
                    continue
                ahead[key] = call
                free.append((call, once))
                continue
            # A stuck one is said so on every skip behind it: health reads the latest skip when
            # the stuck run has left its window of recent runs.
            stuck = f"; {HANDOFF_STUCK}no worker reported it started" if handoff_stuck(run.status, run.error) else ""
            error = (
                f"{HANDOFF_BLOCKED}(run {run.id}, scheduled for {iso_z(run.scheduled_for)}) is still "
                f"{run.status.value}{stuck}"
            )
            self._report(call, once, Outcome(RunStatus.SKIPPED, error=error))
        return free
