"""The base of the hand-off executors: a fire becomes a message on another system's queue.

The scheduler only *submits* (the Docspell rule): in a thread of its own, so :meth:`submit` never
blocks the engine, it checks that the schedule's previous hand-off is final, publishes the message
and waits for the broker to confirm it. The run ends ``submitted`` (handed off), ``skipped`` (the
previous hand-off is still ``submitted`` or ``started``) or ``failed`` (the broker refused or did
not answer: a failed attempt, retried under the schedule's ``retries``, the broker's error in the
history). Nothing a broker or a target does can raise into the engine. The worker-side
integration (:mod:`.reporter`) records what the worker did with the message.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

from tickwork.abc import Executor
from tickwork.config import Section
from tickwork.errors import ExecutorError
from tickwork.plugin import tracing
from tickwork.plugin.calls import ReportOnce
from tickwork.structures import HANDOFF_BLOCKED, HANDOFF_STUCK, JobCall, Outcome, RunStatus, handoff_stuck, iso_z

from .identity import headers, message_id_of
from .nodes import store_of
from .settings import HandoffSettings

log = logging.getLogger("tickwork.handoff")


class HandoffExecutor(Executor):
    """Publishes each run as a message; subclasses say how (:meth:`publish`).

    :param options: the keys of the subclass's :attr:`section`, which extends
        :class:`~tickwork_handoff.settings.HandoffSettings` (``report_timeout``: seconds after its
        hand-off, or its start on a worker, a run that no worker reported on stops blocking its
        schedule and is recorded ``timed_out``; ``pickup_timeout``: seconds after its hand-off a
        run no worker started is marked stuck, by :mod:`.pickup`; ``no_overlap``,
        ``publish_timeout``, ``threads``)
    """

    #: The executor's name in messages (``celery``, ``rq``, ``dramatiq``).
    name: ClassVar[str] = "handoff"
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
        self._lock = threading.Lock()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False

    # -- what a subclass provides ------------------------------------------------------------------

    @abstractmethod
    def connect(self) -> None:
        """Load the application or broker (called by :meth:`start`).

        :raises tickwork.errors.ConfigError: if it cannot be loaded
        """

    @abstractmethod
    def publish(self, call: JobCall, message_id: str, headers: dict[str, str]) -> str:
        """Publish ``call`` as a message with this id and these headers, and return once the
        broker confirmed it (at most :attr:`publish_timeout` seconds).

        :return: a short description for the log (queue, message id)
        :raises Exception: anything the client raises: the attempt fails with its text
        """

    def disconnect(self) -> None:
        """Release the broker connections (called by :meth:`shutdown`)."""

    # -- the Executor interface --------------------------------------------------------------------

    def start(self) -> None:
        self.connect()
        self._pool = concurrent.futures.ThreadPoolExecutor(self.threads, thread_name_prefix=f"tickwork-{self.name}")

    def submit(self, call: JobCall, on_done: Callable[[Outcome], None]) -> None:
        report = ReportOnce(on_done, call.run_id)
        with self._lock:
            if self._pool is None:
                raise ExecutorError(f"{self.name} executor: submit() called before start()")
            if not self._closed:
                future = self._pool.submit(self._hand_off, call, report)
                future.add_done_callback(lambda done: self._settled(done, report))
                return
        report(Outcome(RunStatus.FAILED, error=f"not handed off: the {self.name} executor is shut down"))

    def _settled(self, done: concurrent.futures.Future[None], report: ReportOnce) -> None:
        if done.cancelled():  # shutdown(wait=False) dropped it before a thread took it
            report(Outcome(RunStatus.FAILED, error=f"not handed off: the {self.name} executor shut down first"))

    def _hand_off(self, call: JobCall, once: ReportOnce) -> None:
        def report(outcome: Outcome) -> None:
            # How the hand-off ended, for a tracing plugin's metrics (nothing without one).
            tracing.handed_off(call, self.name, outcome.status.value)
            once(outcome)

        try:
            if self.no_overlap:
                pending = store_of(call.node_id).pending_handoff(
                    call.schedule, self.report_timeout, namespace=call.namespace
                )
                if pending is not None:
                    # A stuck one is said so on every skip behind it: health reads the latest skip
                    # when the stuck run has left its window of recent runs.
                    stuck = (
                        f"; {HANDOFF_STUCK}no worker reported it started"
                        if handoff_stuck(pending.status, pending.error)
                        else ""
                    )
                    report(
                        Outcome(
                            RunStatus.SKIPPED,
                            error=f"{HANDOFF_BLOCKED}(run {pending.id}, scheduled for "
                            f"{iso_z(pending.scheduled_for)}) is still {pending.status.value}{stuck}",
                        )
                    )
                    return
        except Exception as exc:
            log.warning("%s: cannot check the previous hand-off of %s: %s", self.name, call.schedule, exc)
            report(Outcome(RunStatus.FAILED, error=f"not handed off: cannot check the previous hand-off: {exc}"))
            return
        message = message_id_of(call)
        try:
            # The publish span of a tracing plugin (none without one), whose context the message
            # carries to the worker in its headers (W3C traceparent).
            with tracing.publishing(call, self.name) as trace:
                where = self.publish(call, message, {**headers(call), **trace})
        except Exception as exc:
            # A broker outage is this attempt's failure (retried under the schedule's retries),
            # never the node's.
            log.warning("%s: publishing run %s of %s failed: %s", self.name, call.run_id, call.schedule, exc)
            report(Outcome(RunStatus.FAILED, error=f"not handed off: {type(exc).__name__}: {exc}"))
            return
        report(Outcome(RunStatus.SUBMITTED, detail=f"message {message} on {where}"))

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        with self._lock:
            pool, self._closed = self._pool, True
        if pool is None:
            return
        pool.shutdown(wait=False, cancel_futures=not wait)
        if wait:
            # ThreadPoolExecutor.shutdown has no timeout: join its threads with ours.
            done = threading.Event()

            def join() -> None:
                pool.shutdown(wait=True)
                done.set()

            threading.Thread(target=join, daemon=True).start()
            if not done.wait(timeout):
                log.warning("%s: publishes still running at shutdown", self.name)
        self.disconnect()
