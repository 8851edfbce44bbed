"""``SchedulerHarness``: drive declared jobs through a store on a fake clock.

``advance(seconds)`` moves a :class:`FakeClock` from one due time to the next, claims what is due
through the store's public interface, hands each run to the ``local`` executor plugin — the one a
node uses, built through the plugin registry — and waits for its outcome, then ends the run with
the next fire time its trigger gives. Plain functions run on the executor's thread pool,
``async def`` jobs are awaited on its event loop, a :class:`tickwork.RunContext` parameter is
filled, and the schedule's timeout is enforced (in real seconds) by the executor's own watchdog:
the same claim → run → finish path a node takes, minus the engine's threads and the network.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Protocol

from ..abc import Executor, Store
from ..config.calendars import use_calendars
from ..config.tables import CALENDARS, SchedulerConfig
from ..engine.holidayrows import recorded_until
from ..engine.overlap import plan_overlap
from ..engine.planning import grace_of
from ..engine.rerun import Reruns
from ..errors import ConfigError
from ..plugin.manager import default_manager, load_object
from ..plugin.runcontext import current_run
from ..scheduling.declare import DeclaredJob, declared_in
from ..scheduling.firetimes import FireTimes, fire_times
from ..scheduling.sync import first_fire, resume_expired
from ..structures import ADMISSION_FENCED, Admission, Claim, Finish, JobCall, Outcome, RunStatus, ScheduleSpec
from .clock import DEFAULT_START, FakeClock
from .memory import MemoryStore

#: Most fire times one end records as skipped (the engine's own bound is the same order).
MAX_SKIPPED = 1000


class _Binding(Protocol):
    """What the harness needs of the ``local`` executor beyond :class:`~tickwork.abc.Executor`:
    running a given function for a target instead of importing it."""

    def bind(self, target: str, func: Callable[..., Any]) -> None: ...


def _recording(func: Callable[..., Any], results: dict[int, Any]) -> Callable[..., Any]:
    """``func``, also keeping what it returned by run id: an executor reports how a run ended,
    not its value, and a test wants both. The signature (and so the stored arguments and the
    ``RunContext`` parameter) is ``func``'s, through ``functools.wraps``."""
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def recorded_async(*args: Any, **kwargs: Any) -> Any:
            results[current_run().run_id] = value = await func(*args, **kwargs)
            return value

        return recorded_async

    @functools.wraps(func)
    def recorded(*args: Any, **kwargs: Any) -> Any:
        results[current_run().run_id] = value = func(*args, **kwargs)
        return value

    return recorded


@dataclass(frozen=True)
class HarnessRun:
    """One attempt the harness ran (or passed over: ``status`` skipped, never called)."""

    schedule: str
    scheduled_for: datetime
    status: RunStatus
    attempt: int
    #: When it started, by the fake clock.
    started_at: datetime
    run_id: int | None
    #: What the job returned (``None`` when it raised or was not run).
    result: Any = None
    error: str | None = None


class SchedulerHarness:
    """Run jobs on a fake clock, through a real store and the ``local`` executor a node uses.

    :param jobs: module names whose declared jobs (``@tickwork.cron`` ...) to run, and/or
        :class:`~tickwork.structures.ScheduleSpec` objects whose ``local`` target is
        ``module:function``
    :param store: the store to use (default: a new :class:`MemoryStore` on the harness clock); a
        store of your own must read ``clock`` (``MemoryStore(clock=...)``, or a SQL store's
        ``clock=``)
    :param start: the fake time the harness starts at (aware)
    :param clock: the fake clock (default: a new one at ``start``)
    :param node_id: the node name written into claims and history
    :param executor_options: options of the ``local`` executor, as in ``[executor.local]``
        (``mode``, ``max_workers``, ``allowed_modules``)
    :param calendars: the ``[calendars.NAME]`` tables that the jobs' ``holidays`` may name, as
        in the configuration (``{"company": {"country": "DE", "extra": ["2026-12-24"]}}``)

    Close it (or use it as a context manager) to stop the executor's threads.
    """

    def __init__(
        self,
        jobs: Iterable[str | ScheduleSpec | DeclaredJob] = (),
        *,
        store: Store | None = None,
        start: datetime = DEFAULT_START,
        clock: FakeClock | None = None,
        node_id: str = "harness",
        executor_options: dict[str, Any] | None = None,
        calendars: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        if calendars is not None:
            tables = CALENDARS.from_toml("calendars", {name: dict(table) for name, table in calendars.items()})
            use_calendars(tables)
        self.clock = clock or FakeClock(start)
        self.node_id = node_id
        #: A node's default ``scheduler.misfire_grace`` (an abandoned fire's rerun window).
        self.misfire_grace = SchedulerConfig().misfire_grace
        if store is None:
            store = MemoryStore(clock=self.clock)
            store.open()
        self.store = store
        self._functions: dict[str, Callable[..., Any]] = {}
        self._results: dict[int, Any] = {}
        # Built like a node builds it (the registered class, the configured options), so a job
        # runs on the same code path: thread pool, event loop, context, watchdog.
        cls = default_manager().executors.get("local")
        self._executor: Executor = cls(**(executor_options or {}))
        self._started = False
        for job in jobs:
            for declared in self._resolve(job):
                self.add(declared.spec, declared.function)

    @staticmethod
    def _resolve(job: str | ScheduleSpec | DeclaredJob) -> Sequence[DeclaredJob]:
        if isinstance(job, DeclaredJob):
            return [job]
        if isinstance(job, str):
            declared = declared_in(job)
            if not declared:
                raise ConfigError(f"jobs: module {job!r} declares no jobs")
            return declared
        if job.executor != "local":
            raise ConfigError(
                f"jobs: schedule {job.name!r} uses the {job.executor!r} executor; the harness runs local targets only"
            )
        try:
            function = load_object(job.target)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ConfigError(f"jobs: schedule {job.name!r}: cannot load target {job.target!r}: {exc}") from exc
        if not callable(function):
            raise ConfigError(f"jobs: schedule {job.name!r}: target {job.target!r} is not callable")
        return [DeclaredJob(job, function)]

    def add(self, spec: ScheduleSpec, function: Callable[..., Any]) -> None:
        """Store ``spec`` (first due at its next fire after the current fake time) and run
        ``function`` for it.

        :raises tickwork.errors.ConfigError: when another function was added for the same target
        """
        known = self._functions.get(spec.target)
        if known is not None and known is not function:
            raise ConfigError(f"jobs: schedule {spec.name!r}: target {spec.target!r} already runs another function")
        next_fire = first_fire(spec, self.store.now()) if spec.enabled else None
        self.store.add(spec, next_fire)
        if known is None:
            self._functions[spec.target] = function
            binding: _Binding = self._executor  # type: ignore[assignment]  # the local executor binds
            binding.bind(spec.target, _recording(function, self._results))

    def close(self) -> None:
        """Stop the executor, as a stopping node does: without waiting for a thread still running
        a job past its timeout (a thread cannot be killed; it ends on its own). The store stays open."""
        if self._started:
            self._executor.shutdown(wait=False)
            self._started = False

    def __enter__(self) -> SchedulerHarness:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def advance(self, seconds: float) -> list[HarnessRun]:
        """Move the clock ``seconds`` forward, running everything that falls due on the way.

        :return: the attempts made, in the order they ran (fire time, then schedule name)
        """
        end = self.clock() + timedelta(seconds=seconds)
        ran: list[HarnessRun] = []
        while True:
            resume_expired(self.store)  # as a node's housekeeping does
            ran.extend(self._backfills())
            due = self.store.next_due(buckets=None)
            ends_in = self.store.next_pause_end()
            resumes = None if ends_in is None else self.clock() + timedelta(seconds=ends_in)
            if resumes is not None and resumes <= end and (due is None or resumes < due):
                self.clock.set(max(resumes, self.clock()))
                continue
            if due is None or due > end:
                break
            if due > self.clock():
                self.clock.set(due)
            claims = self.store.claim_due(self.node_id, limit=1000, buckets=None)
            if not claims:
                break
            for claim in sorted(claims, key=lambda c: (c.scheduled_for, c.spec.name)):
                ran.extend(self._fire(claim))
        if end > self.clock():
            self.clock.set(end)
        return ran

    def _backfills(self) -> list[HarnessRun]:
        """Run the queued backfill fires (``Admin.backfill``, ``store.queue_backfill``) now, each
        once, as a node's housekeeping does: no retries, the end recorded as the job's outcome."""
        ran: list[HarnessRun] = []
        # Each pass's runs end before the next take: a buffer_all backfill is taken one fire a pass.
        while claims := self.store.take_backfills(self.node_id, limit=1000, buckets=None):
            for claim in claims:
                attempt = self._call(claim)
                self.store.end_attempt(claim, Outcome(attempt.status, error=attempt.error))
                ran.append(attempt)
        return ran

    def _fire(self, claim: Claim) -> list[HarnessRun]:
        if Reruns.wanted(claim):
            # A fire abandoned with its node (released through the store) runs again, as on a node.
            claim = Reruns(self.store, self.node_id, self.misfire_grace).start(claim) or claim
        if claim.run_id is None:
            # Already recorded (invariant 1): advance the schedule without running it again.
            self._end(claim, Outcome(RunStatus.SKIPPED, error="already recorded"))
            return []
        if claim.spec.concurrent:
            # Admitted under its bounds as a node admits it (docs/triggers.md#overlap).
            nxt, skipped = _next_fire(claim, self.clock())
            allow = claim.spec.overlap.runs_beside
            refused = self.store.admit(self.node_id, Admission(claim, allow, nxt, tuple(skipped)))
            if refused == ADMISSION_FENCED:
                return []
            if refused is not None:
                self._end(claim, Outcome(RunStatus.SKIPPED, error=refused))
                passed = HarnessRun(claim.spec.name, claim.scheduled_for, RunStatus.SKIPPED, 1, self.clock(), None)
                return [replace(passed, run_id=claim.run_id, error=refused)]
            if allow:  # released as it started: the run ends by itself, never retried
                attempt = self._call(claim)
                end = Finish(claim, Outcome(attempt.status, error=attempt.error), None, finished_at=self.clock())
                self.store.end_detached(self.node_id, [end])
                return [attempt]
        attempts: list[HarnessRun] = []
        next_fire = fire_times(claim.spec).next_after(claim.scheduled_for)
        while True:
            attempt = self._call(claim)
            attempts.append(attempt)
            outcome = Outcome(attempt.status, error=attempt.error)
            if attempt.status is RunStatus.SUCCEEDED or claim.attempt > claim.spec.retries:
                break
            # A retry waits its back-off on the fake clock, and never runs into the next fire.
            retry_at = self.clock() + claim.spec.retry_backoff * 2 ** (claim.attempt - 1)
            if next_fire is not None and retry_at >= next_fire:
                break
            self.store.end_attempt(claim, outcome, started_at=attempt.started_at)
            self.clock.set(max(retry_at, self.clock()))
            retry = replace(claim, attempt=claim.attempt + 1, run_id=None)
            run_id = self.store.start_attempt(self.node_id, retry)
            if run_id is None:
                return attempts
            claim = replace(retry, run_id=run_id)
        self._end(claim, outcome, started_at=attempts[-1].started_at)
        return attempts

    def _call(self, claim: Claim) -> HarnessRun:
        assert claim.run_id is not None
        if not self._started:
            self._executor.start()
            self._started = True
        started = self.clock()
        run = HarnessRun(
            claim.spec.name, claim.scheduled_for, RunStatus.SUCCEEDED, claim.attempt, started, claim.run_id
        )
        if claim.spec.target not in self._functions:
            error = f"schedule {claim.spec.name!r} has no function in this harness (add it with jobs= or add())"
            return replace(run, status=RunStatus.FAILED, error=error)
        done = threading.Event()
        ended: list[Outcome] = []

        def on_done(outcome: Outcome) -> None:
            ended.append(outcome)
            done.set()

        call = JobCall.for_claim(claim, timeout=claim.spec.timeout.total_seconds(), node_id=self.node_id)
        self._executor.submit(call, on_done)
        # The executor reports every run exactly once, at its end or at its timeout at the latest.
        done.wait()
        outcome = ended[0]
        return replace(run, status=outcome.status, error=outcome.error, result=self._results.pop(claim.run_id, None))

    def _end(self, claim: Claim, outcome: Outcome, started_at: datetime | None = None) -> None:
        now = self.clock()
        trigger = fire_times(claim.spec)
        if claim.spec.overlap.planned and outcome.status is not RunStatus.SKIPPED:
            # As a node plans it (docs/triggers.md#overlap): a fire that came due while the run
            # went on (the job moved the fake clock) waits, and runs on this advance().
            plan = plan_overlap(
                trigger.next_after,
                overlap=claim.spec.overlap,
                scheduled_for=claim.scheduled_for,
                claimed_at=claim.claimed_at,
                now=now,
                grace=grace_of(claim.spec, SchedulerConfig.misfire_grace.default),
                max_catchup=claim.spec.max_catchup,
                max_skipped=MAX_SKIPPED,
            )
            passed = _by_time(plan.skipped, self._due_drops(claim, plan.next_fire, now, MAX_SKIPPED))
            finish = Finish(claim, outcome, plan.next_fire, passed, finished_at=now, started_at=started_at)
            self.store.finish(self.node_id, [finish])
            return
        nxt, skipped = _next_fire(claim, now)
        # As the engine: the dropped fires whose time has come, with their reasons (docs/holidays.md).
        passed = _by_time(tuple(skipped), self._due_drops(claim, nxt, now, MAX_SKIPPED - len(skipped)))
        finish = Finish(claim, outcome, nxt, skipped=passed, finished_at=now, started_at=started_at)
        self.store.finish(self.node_id, [finish])

    def _due_drops(
        self, claim: Claim, next_fire: datetime | None, now: datetime, limit: int
    ) -> list[tuple[datetime, str]]:
        fires = fire_times(claim.spec)
        if not isinstance(fires, FireTimes):
            return []
        return fires.due_drops(claim.scheduled_for, next_fire, now, lambda: recorded_until(self.store, claim), limit)


def _next_fire(claim: Claim, now: datetime) -> tuple[datetime | None, list[tuple[datetime, str]]]:
    """The next fire after ``claim``'s at ``now``, and the fire times passed on the way: skipped,
    as the engine's default misfire policy does."""
    trigger = fire_times(claim.spec)
    skipped: list[tuple[datetime, str]] = []
    nxt = trigger.next_after(claim.scheduled_for)
    while nxt is not None and nxt <= now and len(skipped) < MAX_SKIPPED:
        skipped.append((nxt, "due while the previous run was still active"))
        nxt = trigger.next_after(nxt)
    return nxt, skipped


def _by_time(
    skipped: tuple[tuple[datetime, str], ...], dropped: list[tuple[datetime, str]]
) -> tuple[tuple[datetime, str], ...]:
    return tuple(sorted((*skipped, *dropped), key=lambda item: item[0])) if dropped else skipped
