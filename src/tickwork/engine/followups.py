"""What follows a run's end: a retry, or the schedule's next fire (with the fire times skipped on
the way), or, when planning either fails, parking the schedule with the error."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from ..abc import Store
from ..errors import StoreError
from ..structures import MAX_RETRIES, Claim, Fault, FaultKind, Finish, MisfirePolicy, Outcome, RunStatus, assembled
from .clock import DatabaseClock
from .faults import OnceLogger, describe
from .holidayrows import recorded_until
from .listener import EngineListener
from .nextfires import NextFires
from .overlap import WaitingFires, plan_overlap
from .planning import NextAfter, grace_of, plan_next_fire, plan_retry, with_holidays
from .retries import RetryQueue
from .settings import EngineSettings

log = logging.getLogger("tickwork.engine")

#: The end of a run whose schedule is parked, with the fault recorded (see :meth:`Store.park`).
Parked = tuple[Finish, Fault]


class FollowUps:
    """Plans what follows each ended run (used by :class:`~tickwork.engine.runs.Runs` and by the
    engine's stop); a fault while planning parks that schedule and touches no other."""

    def __init__(
        self,
        *,
        store: Store,
        settings: EngineSettings,
        clock: DatabaseClock,
        retries: RetryQueue,
        next_fires: NextFires,
        listener: Callable[[], EngineListener] = EngineListener,
        backfill_ended: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        #: Called when a backfilled run's fire was queued again for its retry (it may start now).
        self.backfill_ended = backfill_ended
        #: Told of each retry planned (the engine's current listener: tests replace it on a live engine).
        self.listener = listener
        self.settings = settings
        # Bound once: asked only at the end of a fire after a holiday (holidayrows.py).
        self._recorded_until = functools.partial(recorded_until, store)
        self.clock = clock
        self.retries = retries
        self.next_fires = next_fires
        #: Fires left waiting for a run's end (overlap buffer_*, cancel_other): see overlap.py.
        self.waiting = WaitingFires()
        self._errors = OnceLogger(log)

    def give_up_retries(self) -> tuple[list[Finish], list[Parked]]:
        """End every pending retry as failed (the node is stopping): the ends to write and the
        schedules to park, releasing each schedule to its next fire."""
        failed = Outcome(RunStatus.FAILED, error="node stopped before the retry")
        finishes: list[Finish] = []
        parks: list[Parked] = []
        now_mono = self.clock.monotonic()
        for retry in self.retries.take_all():
            # Ending a run never retries it again: only a run that failed now plans one.
            end = self.end_one(retry.claim, failed, retry.mono_claimed, now_mono, None, retry=False)
            if isinstance(end, Finish):
                finishes.append(end)
            elif end is not None:
                parks.append(end)
        return finishes, parks

    def end_one(
        self,
        claim: Claim,
        outcome: Outcome,
        mono_claimed: float,
        now_mono: float,
        started_at: datetime | None,
        *,
        retry: bool = True,
        now: datetime | None = None,
    ) -> Finish | Parked | None:
        """Plan a retry or the next fire of an ended run; a fault doing so parks the schedule.

        :param now: the database clock at ``now_mono``, when the caller knows it already
        :return: the run's end to write (a :class:`Finish`), the schedule to park (a
            :data:`Parked` pair) or ``None``: a retry was planned (the run's claim is kept)
        """
        if claim.backfill:
            return self._end_backfill(claim, outcome, started_at, retry=retry)
        try:
            next_after = self.next_fires.of(claim.spec, claim.scheduled_for)
            if now is None:
                now = self.clock.since_claim(claim.claimed_at, mono_claimed, now_mono)
            failed = retry and outcome.status is RunStatus.FAILED
            if failed and self._retry(claim, next_after, outcome, now, mono_claimed, started_at):
                return None
            return self.finish_for(claim, next_after, outcome, now, started_at)
        except Exception as exc:
            return self.parked(claim, outcome, started_at, exc)

    def _end_backfill(
        self, claim: Claim, outcome: Outcome, started_at: datetime | None, *, retry: bool
    ) -> Finish | None:
        """The end of a backfilled run, or ``None``: it was written already, its fire queued again
        for a retry (:meth:`Store.retry_backfill`). A backfilled run holds no claim: no next fire
        to plan, and no retry kept here: the queue takes it again under the backfill's overlap (a
        ``buffer_all`` retry never runs beside another run of its schedule, and comes before the
        backfill's later fires). So a backfill's retry counts against the schedule's ``retries``
        but does not wait ``retry_backoff``, and the schedule's own next fire is no limit to it."""
        if retry and outcome.status is RunStatus.FAILED and claim.attempt <= min(claim.spec.retries, MAX_RETRIES):
            try:
                self.store.retry_backfill(claim, outcome)
            except StoreError:
                pass  # recorded as a plain failure through the buffered path
            else:
                # Its retry is due when the backfill's queue takes it again: no time to tell.
                self.listener().retries_planned([Finish(claim, outcome, None, started_at=started_at)])
                self.backfill_ended()
                return None  # ended and queued again, or no longer running: nothing more to write
        # finished_at None: the store writes the end by its own clock (Store.end_attempt).
        return Finish(claim, outcome, None, started_at=started_at)

    def backfill_not_run(self, claim: Claim, exc: Exception, now: datetime | None) -> Finish:
        """The end of a backfilled run that could not be handed over (its executor missing on
        this node): the run's failure, never its schedule's (no park, no retry)."""
        self._errors.log(f"{claim.spec.name}: cannot run a backfilled fire", exc)
        return Finish(claim, Outcome(RunStatus.FAILED, error=f"not run: {exc}"), None, started_at=now)

    def _retry(
        self,
        claim: Claim,
        next_after: NextAfter,
        outcome: Outcome,
        now: datetime,
        mono_claimed: float,
        started_at: datetime | None,
    ) -> bool:
        """Keep the claim and retry later if the schedule allows it and the retry would start
        before the next scheduled fire (a retry never overlaps the next fire)."""
        spec = claim.spec
        delay = plan_retry(
            next_after,
            scheduled_for=claim.scheduled_for,
            attempt=claim.attempt,
            retries=spec.retries,
            backoff=spec.retry_backoff.total_seconds(),
            now=now,
        )
        if delay is None:
            return False
        try:
            self.store.end_attempt(claim, outcome, started_at)
        except StoreError:
            return False  # record it as a plain failure through the buffered path
        self.retries.add(claim, delay, mono_claimed)
        ended = Finish(claim, outcome, now + timedelta(seconds=delay), finished_at=now, started_at=started_at)
        self.listener().retries_planned([ended])
        return True

    def finish_for(
        self, claim: Claim, next_after: NextAfter, outcome: Outcome, now: datetime, started_at: datetime | None = None
    ) -> Finish:
        """The end of ``claim`` with the next fire time and the skipped ones (planning.py; a
        schedule whose overlap is not ``skip``: overlap.py)."""
        # Overlap is about the time a run took: a fire that did not run plans as any other.
        if claim.spec.overlap.planned and outcome.status is not RunStatus.SKIPPED:
            plan = plan_overlap(
                next_after,
                overlap=claim.spec.overlap,
                scheduled_for=claim.scheduled_for,
                claimed_at=claim.claimed_at,
                now=now,
                grace=grace_of(claim.spec, self.settings.misfire_grace),
                max_catchup=claim.spec.max_catchup,
            )
            self.waiting.note(claim, plan, now)
        else:
            plan = plan_next_fire(
                next_after,
                scheduled_for=claim.scheduled_for,
                claimed_at=claim.claimed_at,
                now=now,
                policy=claim.spec.misfire or self.settings.misfire or MisfirePolicy.SKIP,
                grace=grace_of(claim.spec, self.settings.misfire_grace),
                max_catchup=claim.spec.max_catchup,
            )
        plan = with_holidays(plan, next_after, claim, now, self._recorded_until)
        # Built without the frozen dataclass's __init__: one per fire (structures.assembled).
        return assembled(
            Finish,
            {
                "claim": claim,
                "outcome": outcome,
                "next_fire": plan.next_fire,
                "skipped": plan.skipped,
                "finished_at": now,
                "started_at": started_at,
            },
        )

    def parked(self, claim: Claim, outcome: Outcome | None, started_at: datetime | None, exc: Exception) -> Parked:
        """The end of a claim whose handling failed: its run records the error (after the run's
        own outcome, if it ran) and the schedule is parked with the error until fixed."""
        fault = Fault(describe(exc), FaultKind.of(exc))
        self._errors.log(f"{claim.spec.name}: cannot handle its claim; parking the schedule", exc)
        if outcome is None:
            outcome = Outcome(RunStatus.FAILED, error=f"not run: {fault.text} (schedule parked)")
        else:
            note = f"schedule parked after the run: {fault.text}"
            outcome = Outcome(outcome.status, error=f"{outcome.error}\n{note}" if outcome.error else note)
        return Finish(claim, outcome, None, started_at=started_at), fault
