"""Runs: handing claims to executors and collecting their outcomes (which arrive through
:mod:`.outcomes`; what follows each end is planned by :mod:`.followups`).

Every claim is handled on its own: a fault while handling one (its trigger kind or time zone
unknown here, its executor missing, its arithmetic failing) ends that run with the error recorded
and parks its schedule (:meth:`tickwork.abc.Store.park`); the other claims of the batch go on.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from ..abc import Executor, Membership
from ..errors import ExecutorNotConfigured, StoreError
from ..structures import Claim, Finish, JobCall, Outcome, RunStatus
from .clock import DatabaseClock
from .concurrency import Concurrency
from .counters import Counters
from .ends import EndWriter
from .fence import NOT_STARTED, StartFence
from .followups import FollowUps, Parked
from .held import HeldFire, HeldFires
from .listener import EngineListener
from .outcomes import Outcomes
from .overlap import CancelWatch, not_stopped
from .planning import grace_of, misfire_reason
from .rerun import Reruns
from .retries import PendingRetry
from .settings import MAX_WAIT, EngineSettings

log = logging.getLogger("tickwork.engine")


@dataclass
class InFlight:
    """A run handed to an executor and not yet ended."""

    claim: Claim
    mono_claimed: float
    deadline: float
    started_at: datetime | None = None
    done: bool = False
    #: Its schedule was released as it started (``overlap = "allow"``): its end is the run's own.
    detached: bool = False


class Runs:
    """The runs of one engine: in flight (by run id) and ended but not yet planned (their
    :class:`.outcomes.Outcomes`, which set ``wake`` when one must not wait)."""

    def __init__(
        self,
        *,
        settings: EngineSettings,
        executors: dict[str, Executor],
        membership: Membership,
        clock: DatabaseClock,
        counters: Counters,
        held: HeldFires,
        follow_ups: FollowUps,
        ends: EndWriter,
        listener: Callable[[], EngineListener],
        wake: threading.Event,
        reruns: Reruns | None = None,
    ) -> None:
        self.settings = settings
        #: Abandoned fires of schedules with on_abandon = "rerun" (rerun.py); None: none rerun.
        self.reruns = reruns
        self.executors = executors
        self.clock = clock
        self.counters = counters
        self.held = held
        #: What follows each end: a retry, the next fire, or parking (followups.py).
        self.follow_ups = follow_ups
        self.ends = ends
        self.listener = listener
        #: Admissions under concurrency bounds, and the ends of runs that outlived their claim.
        self.concurrency = Concurrency(follow_ups.store, settings, counters, listener)
        #: What an executor asks before it starts a run's body (fence.py); replaced by
        #: :meth:`rejoined` when the node learns it was declared dead.
        self.fence = StartFence(membership, membership.rejoins())
        self.in_flight: dict[int, InFlight] = {}
        #: The cancel_other runs, stopped when their schedule's next fire comes (overlap.py).
        self.cancels = CancelWatch()
        self.outcomes: Outcomes[InFlight] = Outcomes(self.in_flight, ends, clock, wake)

    def rejoined(self, epoch: int) -> None:
        """The node learnt it was declared dead (the membership's count is now ``epoch``): runs
        handed over from now on start under a new fence; those handed over before and still
        waiting for their executor are not started (their verdict is :attr:`Verdict.DROP`)."""
        self.fence = StartFence(self.fence.membership, epoch)

    def earliest_deadline(self) -> float | None:
        deadline = min((f.deadline for f in self.in_flight.values()), default=None)
        cancel = self.cancels.earliest()
        return deadline if cancel is None else cancel if deadline is None else min(deadline, cancel)

    # -- dispatch ---------------------------------------------------------------------------------

    def dispatch(self, claims: Iterable[Claim], mono_claimed: float | None = None, *, granted: bool = False) -> None:
        """Start ``claims`` (``granted``: fires claimed ahead whose fenced start was granted;
        any other fire claimed ahead is held until its time)."""
        now_mono = self.clock.monotonic()
        mono_claimed = now_mono if mono_claimed is None else mono_claimed
        immediate: list[Finish] = []
        parks: list[Parked] = []
        started: list[JobCall] = []
        # The clock as of each claim time: the claims of one batch share theirs.
        nows: dict[datetime, datetime] = {}
        for claim in claims:
            now: datetime | None = None
            try:
                now = nows.get(claim.claimed_at)
                if now is None:
                    now = nows[claim.claimed_at] = self.clock.since_claim(claim.claimed_at, mono_claimed, now_mono)
                begun = self._dispatch_one(claim, now, mono_claimed, now_mono, granted)
            except Exception as exc:  # this claim's fault, contained to this claim
                if claim.backfill:
                    # Its run's failure, never its schedule's: the schedule's own fires go on.
                    immediate.append(self.follow_ups.backfill_not_run(claim, exc, now))
                else:
                    parks.append(self.follow_ups.parked(claim, None, None, exc))
                continue
            if begun is None:
                continue
            if isinstance(begun, JobCall):
                started.append(begun)
            else:
                immediate.append(begun)
        if started:
            self.listener().runs_started(started)
        self.ends.add(immediate, parks)

    def _dispatch_one(
        self, claim: Claim, now: datetime, mono_claimed: float, now_mono: float, granted: bool
    ) -> JobCall | Finish | None:
        """Start one claim (database clock ``now``): its call handed to the executor, the end of a
        fire that must not run (already recorded, missed), or ``None``: held until its time."""
        if claim.early and not granted:
            # Even if due already: a fire claimed ahead starts only through the fenced start
            # (HeldFires.start_due), in this pass if it is due.
            self.held.hold(claim, mono_claimed)
            return None
        self.counters.fired += 1
        if claim.backfill:
            # Taken by the store under its backfill's overlap (take_backfills), its run row open:
            # no misfire (it is late on purpose), no admission, no cancel_other watch, no park.
            return self._hand_over(claim, self._executor_of(claim), now, mono_claimed, now_mono)
        next_after = self.follow_ups.next_fires.of(claim.spec, claim.scheduled_for)  # an unknown kind or zone parks it
        if claim.run_id is None and self.reruns is not None and self.reruns.wanted(claim):
            # Only a fire the history has already costs this check (a plain claim: one compare).
            try:
                claim = self.reruns.start(claim) or claim
            except StoreError as exc:
                # Not parked (the schedule is not at fault) and not advanced (that would lose
                # the rerun): left untracked, the reconcile gives the claim back to be judged again.
                log.warning("%s: cannot open the rerun of an abandoned fire now (%s)", claim.spec.name, exc)
                return None
        if claim.run_id is None:
            log.warning(
                "%s: the fire at %s already has a run in the history; not running it twice",
                claim.spec.name,
                claim.scheduled_for.isoformat(),
            )
            return self.follow_ups.finish_for(claim, next_after, Outcome(RunStatus.SKIPPED, "already recorded"), now)
        policy = claim.spec.misfire or self.settings.misfire
        grace = grace_of(claim.spec, self.settings.misfire_grace)
        # A fire that waited for the previous run's end is late from that end (overlap.py).
        late_since = self.follow_ups.waiting.late_since(claim)
        missed = misfire_reason(
            scheduled_for=late_since, starting_at=now, attempt=claim.attempt, policy=policy, grace=grace
        )
        if missed is not None:
            self.counters.skipped += 1
            return self.follow_ups.finish_for(claim, next_after, Outcome(RunStatus.SKIPPED, error=missed), now)
        executor = self._executor_of(claim)
        detached = False
        started_at: datetime | None = now
        namespace_limit = self.concurrency.namespace_limit(claim.spec.namespace)
        if claim.spec.concurrent or namespace_limit is not None:
            admitted = self.concurrency.admit(claim, next_after, now, namespace_limit)
            if admitted is not True:
                return admitted  # skipped (a bound reached), or taken over
            detached = claim.spec.overlap.runs_beside
            started_at = None  # the store recorded the admission's time as its start
        call = self._hand_over(claim, executor, started_at, mono_claimed, now_mono, detached=detached)
        if claim.spec.overlap.cancels:
            self.cancels.watch(claim, executor, next_after, now, now_mono)
        return call

    def hands_off(self, claim: Claim) -> bool:
        """Whether ``claim``'s executor hands its runs to a queue outside the node
        (:attr:`Executor.hands_off`)."""
        executor = self.executors.get(claim.spec.executor)
        return executor is not None and executor.hands_off

    def _executor_of(self, claim: Claim) -> Executor:
        executor = self.executors.get(claim.spec.executor)
        if executor is None:
            raise ExecutorNotConfigured(claim.spec.executor, self.settings.node_id)
        return executor

    def _hand_over(
        self,
        claim: Claim,
        executor: Executor,
        started_at: datetime | None,
        mono_claimed: float,
        now_mono: float,
        *,
        detached: bool = False,
    ) -> JobCall:
        """Hand ``claim``'s run to ``executor`` under the fence, tracked until its end or its
        hard deadline (timeout + ``hard_timeout_grace``)."""
        assert claim.run_id is not None
        timeout = min(claim.spec.timeout.total_seconds(), MAX_WAIT)
        deadline = now_mono + timeout + self.settings.hard_timeout_grace
        flight = InFlight(claim, mono_claimed, deadline, started_at=started_at, detached=detached)
        self.in_flight[claim.run_id] = flight
        call = JobCall.for_claim(claim, timeout=timeout, node_id=self.settings.node_id)
        try:
            # An executor that may hold a run before starting its body (a queue for a worker)
            # asks the fence at that moment (the local executor); others start it as they take it.
            executor.submit_fenced(call, self.outcomes.reporter(flight), self.fence)
        except Exception as exc:  # an executor bug must not lose the claim
            log.exception("executor %s refused run %s", claim.spec.executor, claim.run_id)
            self.outcomes.reporter(flight)(Outcome(RunStatus.FAILED, error=f"executor refused the run: {exc!r}"))
        return call

    # -- starting what waited ---------------------------------------------------------------------

    def start_held(self, due: list[HeldFire]) -> None:
        """Dispatch held fires whose start was granted (:meth:`HeldFires.start_due`)."""
        # Claims of one batch share their claim time; dispatch them together.
        for mono_claimed, entries in itertools.groupby(due, key=lambda h: h.mono_claimed):
            self.dispatch([h.claim for h in entries], mono_claimed, granted=True)

    def start_retry(self, retry: PendingRetry, run_id: int | None) -> None:
        if run_id is None:
            log.warning(
                "%s: claim taken over before retry %d; not retrying", retry.claim.spec.name, retry.claim.attempt
            )
            return
        # Started under its fence by Store.start_attempt: never held again.
        self.dispatch([replace(retry.claim, run_id=run_id)], retry.mono_claimed, granted=True)

    # -- ending runs ------------------------------------------------------------------------------

    def finish_completed(self) -> None:
        finishes: list[Finish] = []
        parks: list[Parked] = []
        now_mono = self.clock.monotonic()
        first_arrived: float | None = None
        not_started: list[str] = []
        # The clock now, per claim batch (claim time and monotonic time of its answer); a run's
        # end is that as of when it arrived (DatabaseClock.before): one estimate per batch.
        anchors: dict[tuple[datetime, float], datetime] = {}
        for flight, outcome, arrived in self.outcomes.arrived():
            if first_arrived is None:
                first_arrived = arrived
            if flight.done:  # already ended by the engine's own deadline
                continue
            flight.done = True
            run_id = flight.claim.run_id
            assert run_id is not None
            self.in_flight.pop(run_id, None)
            not_stopped_by = self.cancels.ended(run_id, arrived)
            if outcome is NOT_STARTED:
                # Its body never started: the node was declared dead while it waited for its
                # executor, and the others recorded it abandoned. Nothing to write (its end would
                # only note it on their row, one statement and one WARNING per run).
                not_started.append(flight.claim.spec.name)
                continue
            # Planned and recorded as of the moment it ended, not when this pass got to it.
            ended = min(arrived, now_mono)
            claim = flight.claim
            key = (claim.claimed_at, flight.mono_claimed)
            anchor = anchors.get(key)
            if anchor is None:
                anchor = anchors[key] = self.clock.since_claim(claim.claimed_at, flight.mono_claimed, now_mono)
            now = self.clock.before(anchor, now_mono - ended)
            if flight.detached:
                # No claim to release, no retry: the run row ends on its own.
                self.concurrency.add(Finish(claim, outcome, None, finished_at=now, started_at=flight.started_at))
                continue
            end = self.follow_ups.end_one(claim, outcome, flight.mono_claimed, ended, flight.started_at, now=now)
            if not_stopped_by is not None and isinstance(end, Finish):
                end = not_stopped(end, not_stopped_by)  # overlap cancel_other: say it could not be
            if isinstance(end, Finish):
                finishes.append(end)
            elif end is not None:
                parks.append(end)
        if not_started:
            self.counters.not_started += len(not_started)
            log.warning(
                "did not start %d run(s) waiting for their executor: this node was declared dead meanwhile and "
                "the other nodes recorded them abandoned: %s",
                len(not_started),
                ", ".join(not_started[:10]) + (" ..." if len(not_started) > 10 else ""),
            )
        self.ends.add(finishes, parks, since=first_arrived)

    def write_ends(self, *, now: bool = False, keep_backfills: bool = False) -> None:
        """Write the gathered ends if their time has come (``now``: whatever their time;
        ``keep_backfills``: backfilled runs' ends are left for the pass's take to carry,
        :meth:`.ends.EndWriter.write_due`).

        :raises tickwork.errors.StoreError: after the end writer kept what was not written
        """
        if now:
            self.ends.write()
        else:
            self.ends.write_due(keep_backfills=keep_backfills)
        self.concurrency.write()

    def expire_overdue(self) -> None:
        """Backstop for an executor that never reports: end the run as timed out ourselves. Also
        stops the cancel_other runs whose schedule's next fire came (overlap.py)."""
        now_mono = self.clock.monotonic()
        self.cancels.cancel_due(now_mono)
        for flight in [f for f in self.in_flight.values() if not f.done and f.deadline <= now_mono]:
            log.error(
                "run %s of %s never reported an end; recording it as timed out",
                flight.claim.run_id,
                flight.claim.spec.name,
            )
            self.outcomes.reporter(flight)(
                Outcome(RunStatus.TIMED_OUT, error="the executor did not report an end within timeout + grace")
            )
