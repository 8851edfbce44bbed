"""The engine of one tickwork node: sleep until something is due, claim it, run it, end it.

One thread runs the loop; executors report outcomes from their own threads into a queue the loop
drains in batches, so claims, history writes and releases are each one statement per batch.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import logging
import queue
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from .abc import Executor, Membership, Store
from .errors import StoreError, TickworkError
from .listener import EngineListener, SafeListener, SkippedFire
from .runlog import log_run_ends
from .structures import Claim, Finish, JobCall, MisfirePolicy, Outcome, RunStatus
from .tracebacks import format_exception as format_exception  # re-exported: older plugins import it here
from .triggers import get_trigger

log = logging.getLogger("tickwork.engine")

#: At most this many skipped fire times are written to the history for one gap.
MAX_SKIPPED_RECORDS = 100
#: Seconds a reading of the database clock is trusted before a newer one replaces it (however
#: slow): NTP keeps two hosts' clock rates within tens of parts per million, so 0.5 ms at most.
CLOCK_SYNC_MAX_AGE = 10.0
#: Seconds after the last time something was due to this node during which it polls for the
#: next due time while everything it may claim is running elsewhere (see _sleep_seconds).
BUSY_POLL_WINDOW = 60.0
#: Seconds a next due time read from the store is used before it is read again, when no change was
#: notified meanwhile (other nodes' ends are not notified: they are seen this much later at most).
NEXT_DUE_MAX_AGE = 0.25
#: Seconds between reads of the database clock for sleep times; in between, the last reading
#: plus the monotonic time since stands in for it (a round trip and a commit saved per loop).
CLOCK_READ_INTERVAL = 1.0


@dataclass(frozen=True)
class EngineSettings:
    """Engine knobs (the ``[scheduler]`` table; see docs/configuration.md)."""

    node_id: str
    batch_size: int = 100
    max_in_flight: int = 1000
    max_sleep: float = 60.0
    misfire: MisfirePolicy = MisfirePolicy.SKIP
    misfire_grace: float = 30.0
    hard_timeout_grace: float = 60.0
    reap_interval: float = 15.0
    renew_interval: float = 10.0
    history_retention: timedelta | None = timedelta(days=30)
    #: Claim fires due within this many seconds and start them on time from memory, so that
    #: the claim round trip is off the path between due time and start. Claiming begins once
    #: a fire is due within about half of it, so one claim gathers what came due meanwhile.
    lookahead: float = 1.0


@dataclass
class InFlight:
    """A run handed to an executor and not yet ended."""

    claim: Claim
    mono_claimed: float
    deadline: float
    started_at: datetime | None = None
    done: bool = False
    renewed: float = field(default=0.0)


class Engine:
    """Runs the claim → execute → finish loop of one node.

    :param store: an open store
    :param executors: executors by name (a schedule names the one that runs it)
    :param membership: started membership (which buckets this node attempts)
    """

    def __init__(
        self,
        store: Store,
        executors: dict[str, Executor],
        membership: Membership,
        settings: EngineSettings,
        *,
        clock: Callable[[], datetime] | None = None,
        listener: EngineListener | None = None,
    ) -> None:
        self.store = store
        self.listener: EngineListener = SafeListener(listener) if listener is not None else EngineListener()
        self.clock = clock
        self.executors = executors
        self.membership = membership
        self.settings = settings
        self._done: queue.SimpleQueue[tuple[InFlight, Outcome]] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self.in_flight: dict[int, InFlight] = {}
        # Ends not yet written (the database was unreachable); retried before anything else.
        self._unsaved: list[Finish] = []
        # Failed runs waiting for a retry, holding their claim: (monotonic due time, claim, mono_claimed).
        self._retries: list[tuple[float, Claim, float]] = []
        # Claims taken ahead of their time, waiting for it: (scheduled_for, seq, claim, mono_claimed).
        self._held: list[tuple[datetime, int, Claim, float]] = []
        self._held_seq = itertools.count()
        # The database clock against this node's monotonic clock: (database time, monotonic time
        # right after it was read, round trip of the read); see _now.
        self._clock_sync: tuple[datetime, float, float] | None = None
        self._clock_read_at = -CLOCK_READ_INTERVAL
        # The earliest fire this node may claim, as last read (see _claim_window_open).
        self._next_due: datetime | None = None
        self._next_due_known = False
        self._next_due_read_at = 0.0
        # Bumped by wake(): a next due time read before the latest change is not trusted.
        self._changes = 0
        self._next_due_changes = -1
        self._claim_lead = self._draw_claim_lead()
        # A node that has just started looks as if something were due: the fires it may claim
        # may all be held by nodes that started before it.
        self._due_seen_at = time.monotonic()
        self._next_reap = 0.0
        self._next_renew = 0.0
        self._next_prune = 0.0
        self._db_backoff = 0.0
        #: Counters for logs, tests and benchmarks.
        self.fired = 0
        self.finished = 0
        self.skipped = 0
        self.fenced_out = 0

    # -- control ----------------------------------------------------------------------------------

    def wake(self) -> None:
        """Re-check at once: something changed in the store (a notification, a membership change)."""
        self._changes += 1
        self._wake.set()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def run_forever(self, until: float | None = None) -> None:
        """Loop until :meth:`stop` (or the monotonic time ``until``); survives database outages."""
        # Everything built so far (modules, plugins, the store's engine and metadata) lives as long
        # as the node: keep it out of the garbage collector's full passes, which otherwise stop
        # this thread for 50-70 ms every few seconds under load, right when due runs are to be
        # started (measured: docs/benchmarks.md#steady-lag).
        gc.freeze()
        while not self._stopping.is_set():
            if until is not None and time.monotonic() >= until:
                break
            self._wake.clear()
            try:
                busy = self.tick()
                # Reading the next due time is a query too: an outage may surface here first.
                timeout = 0.0 if busy else self._sleep_seconds()
                if self._db_backoff:
                    log.warning("database reachable again; resuming")
                self._db_backoff = 0.0
            except StoreError as exc:
                self.listener.store_error(exc)
                self._db_backoff = min(max(self._db_backoff * 2, 0.5), 10.0)
                log.warning("cannot reach the store (%s); retrying in %.1fs", exc, self._db_backoff)
                self._wake.wait(self._db_backoff)
                continue
            if busy:
                continue
            if until is not None:
                timeout = min(timeout, max(0.0, until - time.monotonic()))
            self._wake.wait(timeout)

    def drop_retries(self) -> None:
        """Give up pending retries (node stopping): release their schedules to the next fire."""
        now_mono = time.monotonic()
        pending, self._retries = self._retries, []
        if pending:
            failed = Outcome(RunStatus.FAILED, error="node stopped before the retry")
            self._end([self._finish_for(claim, failed, mono, now_mono) for _, claim, mono in pending])

    @property
    def held(self) -> list[Claim]:
        """Claims taken ahead of their time that have not started yet, earliest first."""
        return [h[2] for h in sorted(self._held)]

    def release_held(self) -> int:
        """Give back claims taken ahead of their time (node stopping), so that another node
        can run them on time; see :meth:`tickwork.abc.Store.unclaim`."""
        if not self._held:
            return 0
        given_back = self.store.unclaim(self.settings.node_id, [h[2] for h in self._held])
        self._held = []  # only now: if the store failed, they are still ours to release
        log.info("gave back %d claim(s) taken ahead of their time", given_back)
        return given_back

    def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for in-flight runs to end and record them."""
        deadline = time.monotonic() + timeout
        while self.in_flight and time.monotonic() < deadline:
            self._wake.wait(min(0.05, max(0.0, deadline - time.monotonic())))
            self._wake.clear()
            self._expire_overdue()
            self._finish_completed()

    # -- one iteration ----------------------------------------------------------------------------

    def tick(self) -> bool:
        """One pass: end completed runs, housekeeping, claim and dispatch what is due.

        :return: True when a full batch was claimed (more may be due right away)
        """
        self._expire_overdue()
        self._finish_completed()
        if self._unsaved:
            self._end([])
        self._housekeeping()
        # A node unsure of its membership starts nothing, held fires included: others may soon
        # declare it dead and release its claims (docs/claim-protocol.md, bounds).
        if not self.membership.healthy():
            return False
        self._start_held()
        self._start_due_retries()
        room = self.settings.max_in_flight - len(self.in_flight) - len(self._held)
        if room <= 0:
            return False
        if not self._claim_window_open():
            return False
        limit = min(self.settings.batch_size, room)
        claim_started = time.monotonic()
        claims = self.store.claim_due(
            self.settings.node_id,
            limit=limit,
            buckets=self.membership.owned_buckets(),
            ahead=self.settings.lookahead,
        )
        self.listener.claimed(len(claims), time.monotonic() - claim_started)
        if claims:
            self._due_seen_at = time.monotonic()
            self._dispatch(claims)
        if len(claims) < limit:
            # The window is drained: claim again only after reading what is due next (what was
            # read before is claimed now), at a new lead.
            self._next_due_known = False
            self._claim_lead = self._draw_claim_lead()
        return len(claims) >= limit

    def _sleep_seconds(self) -> float:
        sleep = self.settings.max_sleep
        if self.in_flight:
            sleep = min(sleep, max(0.0, min(f.deadline for f in self.in_flight.values()) - time.monotonic()))
        if self.settings.renew_interval and (self.in_flight or self._held):
            sleep = min(sleep, max(0.0, self._next_renew - time.monotonic()))
        sleep = min(sleep, max(0.0, self._next_reap - time.monotonic()))
        if not self.membership.healthy():
            return min(sleep, 0.5)  # nothing starts meanwhile; check again soon
        if self._retries:
            sleep = min(sleep, max(0.0, min(r[0] for r in self._retries) - time.monotonic()))
        if self._held:
            sleep = min(sleep, self._until_start(self._held[0]))
        if len(self.in_flight) + len(self._held) >= self.settings.max_in_flight:
            return min(sleep, 0.5)
        due = self._next_due if self._next_due_fresh() else self._read_next_due()
        if due is not None:
            # The database clock decides; ask it rather than trusting this node's wall clock.
            until_due = (due - self._db_now()).total_seconds() - self._claim_lead
            sleep = min(sleep, max(until_due, 0.001))
            self._due_seen_at = time.monotonic()
        elif self.settings.lookahead > 0 and time.monotonic() - self._due_seen_at < BUSY_POLL_WINDOW:
            # Everything this node may claim is running, held by whichever node claimed it ahead;
            # ends are not notified, so look again in time to take a turn at the next claim. (A
            # cluster with nothing to do stops looking after BUSY_POLL_WINDOW.)
            sleep = min(sleep, self.settings.lookahead / 4)
        return max(sleep, 0.0)

    def _claim_window_open(self) -> bool:
        """Whether to claim now. When claiming ahead, only once the earliest claimable fire is due
        within this node's claim lead (about half the lookahead): a wake-up (a run ended here or
        elsewhere) then does not claim one freshly released schedule at a time, which at 1,000
        fires/s spread over each second cost a claim statement, a commit and an empty claim on
        the other nodes per fire or two; nor does the node that ran the last fires take the next
        ones as it releases them, before any other node could.

        The next due time is the one read before the loop last slept; after a claim drained the
        window it is read again first. A change that brings a fire closer wakes the loop, which
        reads it again before it sleeps, so the gate delays such a fire by one loop at most."""
        if self.settings.lookahead <= 0:
            return True
        if not self._next_due_known:
            self._read_next_due()
        if self._next_due is None:
            return False
        return (self._next_due - self._db_now()).total_seconds() <= self._claim_lead

    def _read_next_due(self) -> datetime | None:
        changes = self._changes
        self._next_due = self.store.next_due(buckets=self.membership.owned_buckets())
        self._next_due_known, self._next_due_read_at, self._next_due_changes = True, time.monotonic(), changes
        return self._next_due

    def _next_due_fresh(self) -> bool:
        """Whether the next due time last read can be used without reading it again: nothing was
        notified since, it is younger than :data:`NEXT_DUE_MAX_AGE`, and this node's own ends have
        been folded in (see :meth:`_end`). Runs that end one at a time otherwise cost a read each
        (measured: 0.76-0.93 reads per fire on SQLite at 1,000 fires/s)."""
        return (
            self._next_due_known
            and self._next_due_changes == self._changes
            and time.monotonic() - self._next_due_read_at < NEXT_DUE_MAX_AGE
        )

    def _draw_claim_lead(self) -> float:
        """How long before a fire's time this node's next claim ahead begins: half the lookahead
        less up to 2 % of it, drawn anew after each drained claim. All owners of a fire wake at
        about the same time, so a large batch is claimed by all of them at once; without the
        jitter, the owner whose clock reading happens to be tightest would win every small batch
        (in a 3-node test one node ran 1,079 fires and another 0)."""
        lookahead = self.settings.lookahead
        return lookahead * random.uniform(0.48, 0.5)

    # -- claims taken ahead of their time ---------------------------------------------------------

    def _until_start(self, entry: tuple[datetime, int, Claim, float]) -> float:
        """Seconds until a held claim is due (0 when it is), by the claim's database clock."""
        scheduled_for, _, claim, mono_claimed = entry
        now = self._now(claim, mono_claimed, time.monotonic())
        return max(0.0, (scheduled_for - now).total_seconds())

    def _hold(self, claim: Claim, mono_claimed: float) -> None:
        heapq.heappush(self._held, (claim.scheduled_for, next(self._held_seq), claim, mono_claimed))

    def _start_held(self) -> None:
        due = []
        while self._held and self._until_start(self._held[0]) <= 0.0:
            due.append(heapq.heappop(self._held))
        # Claims of one batch share their claim time; dispatch them together.
        for mono_claimed, entries in itertools.groupby(due, key=lambda entry: entry[3]):
            self._dispatch([entry[2] for entry in entries], mono_claimed)

    # -- dispatch ---------------------------------------------------------------------------------

    def _dispatch(self, claims: Iterable[Claim], mono_claimed: float | None = None) -> None:
        now_mono = time.monotonic()
        mono_claimed = now_mono if mono_claimed is None else mono_claimed
        immediate: list[Finish] = []
        started: list[JobCall] = []
        for claim in claims:
            if claim.early and self._now(claim, mono_claimed, now_mono) < claim.scheduled_for:
                self._hold(claim, mono_claimed)
                continue
            self.fired += 1
            if claim.run_id is None:
                log.warning(
                    "%s: the fire at %s already has a run in the history; not running it twice",
                    claim.spec.name,
                    claim.scheduled_for.isoformat(),
                )
                immediate.append(self._finish_for(claim, None, now_mono, now_mono))
                continue
            policy = claim.spec.misfire or self.settings.misfire
            late = (claim.claimed_at - claim.scheduled_for).total_seconds()
            if claim.attempt == 1 and late > self.settings.misfire_grace and policy is not MisfirePolicy.ONCE:
                outcome = Outcome(
                    RunStatus.SKIPPED,
                    error=f"missed by {late:.1f}s (misfire policy {policy.value}, grace "
                    f"{self.settings.misfire_grace:g}s)",
                )
                self.skipped += 1
                immediate.append(self._finish_for(claim, outcome, now_mono, now_mono))
                continue
            executor = self.executors.get(claim.spec.executor)
            if executor is None:
                outcome = Outcome(
                    RunStatus.FAILED,
                    error=f"executor {claim.spec.executor!r} is not configured on node {self.settings.node_id}",
                )
                immediate.append(self._finish_for(claim, outcome, now_mono, now_mono))
                continue
            timeout = claim.spec.timeout.total_seconds()
            flight = InFlight(
                claim,
                mono_claimed,
                now_mono + timeout + self.settings.hard_timeout_grace,
                started_at=self._now(claim, mono_claimed, now_mono),
            )
            assert claim.run_id is not None
            self.in_flight[claim.run_id] = flight
            call = JobCall(
                run_id=claim.run_id,
                schedule=claim.spec.name,
                scheduled_for=claim.scheduled_for,
                target=claim.spec.target,
                arguments=claim.spec.arguments,
                timeout=timeout,
                attempt=claim.attempt,
                node_id=self.settings.node_id,
            )
            started.append(call)
            try:
                executor.submit(call, self._on_done_for(flight))
            except Exception as exc:  # an executor bug must not lose the claim
                log.exception("executor %s refused run %s", claim.spec.executor, claim.run_id)
                self._on_done_for(flight)(Outcome(RunStatus.FAILED, error=f"executor refused the run: {exc!r}"))
        if started:
            self.listener.runs_started(started)
        if immediate:
            self._end(immediate)

    def _on_done_for(self, flight: InFlight) -> Callable[[Outcome], None]:
        def on_done(outcome: Outcome) -> None:
            self._done.put((flight, outcome))
            self._wake.set()

        return on_done

    # -- ending runs ------------------------------------------------------------------------------

    def _finish_completed(self) -> None:
        finishes: list[Finish] = []
        now_mono = time.monotonic()
        while True:
            try:
                flight, outcome = self._done.get_nowait()
            except queue.Empty:
                break
            if flight.done:  # already ended by the engine's own deadline
                continue
            flight.done = True
            run_id = flight.claim.run_id
            assert run_id is not None
            self.in_flight.pop(run_id, None)
            if outcome.status is RunStatus.FAILED and self._plan_retry(flight, outcome, now_mono):
                continue
            finishes.append(self._finish_for(flight.claim, outcome, flight.mono_claimed, now_mono, flight.started_at))
        if finishes:
            self._end(finishes)

    def _plan_retry(self, flight: InFlight, outcome: Outcome, now_mono: float) -> bool:
        """Keep the claim and retry later if the schedule allows it and the retry would start
        before the next scheduled fire (a retry never overlaps the next fire)."""
        claim = flight.claim
        if claim.attempt > claim.spec.retries:
            return False
        delay = claim.spec.retry_backoff.total_seconds() * 2 ** (claim.attempt - 1)
        now = self._now(claim, flight.mono_claimed, now_mono)
        trigger = get_trigger(claim.spec.trigger_kind, claim.spec.expression, claim.spec.timezone)
        following = trigger.next_after(claim.scheduled_for)
        if following is not None and now + timedelta(seconds=delay) >= following:
            log.info("%s: no retry, it would overlap the next fire at %s", claim.spec.name, following.isoformat())
            return False
        try:
            self.store.end_attempt(claim, outcome, flight.started_at)
        except StoreError:
            return False  # record it as a plain failure through the buffered path
        retry = replace(claim, attempt=claim.attempt + 1, run_id=None)
        self._retries.append((now_mono + delay, retry, flight.mono_claimed))
        log.info("%s: attempt %d failed; retry %d in %.1fs", claim.spec.name, claim.attempt, retry.attempt, delay)
        return True

    def _start_due_retries(self) -> None:
        now_mono = time.monotonic()
        due = [r for r in self._retries if r[0] <= now_mono]
        if not due:
            return
        self._retries = [r for r in self._retries if r[0] > now_mono]
        for _, claim, mono_claimed in due:
            run_id = self.store.start_attempt(self.settings.node_id, claim)
            if run_id is None:
                log.warning("%s: claim taken over before retry %d; not retrying", claim.spec.name, claim.attempt)
                continue
            self._dispatch([replace(claim, run_id=run_id)], mono_claimed)

    def _expire_overdue(self) -> None:
        """Backstop for an executor that never reports: end the run as timed out ourselves."""
        now_mono = time.monotonic()
        overdue = [f for f in self.in_flight.values() if not f.done and f.deadline <= now_mono]
        for flight in overdue:
            log.error(
                "run %s of %s never reported an end; recording it as timed out",
                flight.claim.run_id,
                flight.claim.spec.name,
            )
            self._on_done_for(flight)(
                Outcome(RunStatus.TIMED_OUT, error="the executor did not report an end within timeout + grace")
            )

    def _end(self, finishes: list[Finish]) -> None:
        """Write ends in one batch; on a store error keep them for the next attempt (no end is lost
        to a database outage: the claim stays held, so nobody else fires those schedules)."""
        finishes = self._unsaved + finishes
        self._unsaved = []
        try:
            landed = self.store.finish(self.settings.node_id, finishes)
        except StoreError:
            self._unsaved = finishes
            raise
        self.finished += len(finishes)
        self.fenced_out += landed.count(False)
        self._report_ends(finishes)
        if self._next_due_known:
            # The schedules released here are due at their next fire (or at a "run now" that
            # arrived meanwhile, which the next read, at most NEXT_DUE_MAX_AGE later, finds).
            released = [f.next_fire for f, ok in zip(finishes, landed, strict=True) if ok and f.next_fire is not None]
            if released:
                earliest = min(released)
                if self._next_due is None or earliest < self._next_due:
                    self._next_due = earliest
        log_run_ends(self.settings.node_id, finishes, landed)

    def _report_ends(self, finishes: list[Finish]) -> None:
        """Tell the listener which runs ended and which fire times were recorded as skipped."""
        results = [f for f in finishes if f.outcome.status is not RunStatus.SKIPPED]
        skipped = [
            SkippedFire(f.claim.spec.name, f.claim.scheduled_for, f.outcome.error or "skipped")
            for f in finishes
            if f.outcome.status is RunStatus.SKIPPED
        ]
        skipped += [SkippedFire(f.claim.spec.name, at, reason) for f in finishes for at, reason in f.skipped]
        if results:
            self.listener.runs_finished(results)
        if skipped:
            self.listener.fires_skipped(skipped)

    def _db_now(self) -> datetime:
        """The database clock (a lower bound, behind by well under a millisecond), read from the
        database at most every :data:`CLOCK_READ_INTERVAL` seconds."""
        if self.clock is not None:
            return self.clock()
        now_mono = time.monotonic()
        synced = self._synced_now(now_mono)
        if synced is not None and now_mono - self._clock_read_at < CLOCK_READ_INTERVAL:
            return synced
        return self._read_db_clock()

    def _synced_now(self, now_mono: float) -> datetime | None:
        """The last database clock reading plus the monotonic time since (``None`` before one)."""
        sync = self._clock_sync
        return None if sync is None else sync[0] + timedelta(seconds=now_mono - sync[1])

    def _read_db_clock(self) -> datetime:
        """Read the database clock and keep the tightest recent reading for :meth:`_now`."""
        before = time.monotonic()
        now = self.store.now()
        after = time.monotonic()
        self._clock_read_at = after
        sync = self._clock_sync
        if sync is None or after - before <= sync[2] or after - sync[1] > CLOCK_SYNC_MAX_AGE:
            self._clock_sync = (now, after, after - before)
        return now

    def _now(self, claim: Claim, mono_claimed: float, now_mono: float) -> datetime:
        """The database clock now, never ahead of it (a claim taken ahead of its time must not
        start early): the later of two lower bounds, the claim's time plus the monotonic time
        since its answer arrived and the last clock reading plus the time since. Each is behind
        by at most the round trip it came with; the claim's can be tens of milliseconds under
        load, the clock reading's well under one."""
        if self.clock is not None:
            return self.clock()
        now = claim.claimed_at + timedelta(seconds=now_mono - mono_claimed)
        synced = self._synced_now(now_mono)
        return now if synced is None else max(now, synced)

    def _finish_for(
        self,
        claim: Claim,
        outcome: Outcome | None,
        mono_claimed: float,
        now_mono: float,
        started_at: datetime | None = None,
    ) -> Finish:
        """Compute the next fire time and the skipped ones (rules: docs/deployment-sync.md#skips).

        "Now" is the database clock of the claim plus the monotonic time since (no extra round
        trip, immune to this node's wall clock); an injected clock replaces it in tests.
        """
        now = self._now(claim, mono_claimed, now_mono)
        policy = claim.spec.misfire or self.settings.misfire
        floor = now - timedelta(seconds=self.settings.misfire_grace) if policy is MisfirePolicy.ALL else now
        trigger = get_trigger(claim.spec.trigger_kind, claim.spec.expression, claim.spec.timezone)
        skipped: list[tuple[datetime, str]] = []
        nxt = trigger.next_after(claim.scheduled_for)
        while nxt is not None and nxt <= floor and len(skipped) < MAX_SKIPPED_RECORDS:
            if nxt > claim.claimed_at:
                reason = "due while the previous run was still active"
            elif (claim.claimed_at - claim.scheduled_for).total_seconds() <= self.settings.misfire_grace:
                late = (claim.claimed_at - claim.scheduled_for).total_seconds()
                reason = f"passed before the previous fire was claimed ({late:.1f}s late)"
            else:
                reason = f"missed: no node ran it in time (misfire policy {policy.value})"
            skipped.append((nxt, reason))
            nxt = trigger.next_after(nxt)
        if nxt is not None and nxt <= floor:
            nxt = trigger.next_after(floor)  # a long gap: jump without recording every time
        if outcome is None:
            outcome = Outcome(RunStatus.SKIPPED, error="already recorded")
        return Finish(
            claim=claim,
            outcome=outcome,
            next_fire=nxt,
            skipped=tuple(skipped),
            finished_at=now,
            started_at=started_at,
        )

    # -- housekeeping -----------------------------------------------------------------------------

    def _housekeeping(self) -> None:
        now_mono = time.monotonic()
        if (self.in_flight or self._retries or self._held) and now_mono >= self._next_renew:
            self._next_renew = now_mono + self.settings.renew_interval
            held = [f.claim for f in self.in_flight.values()] + [r[1] for r in self._retries]
            held += [h[2] for h in self._held]
            self.store.renew(self.settings.node_id, held)
        if now_mono >= self._next_reap:
            self._next_reap = now_mono + self.settings.reap_interval
            reaped = self.store.reap_expired(self.settings.hard_timeout_grace)
            if reaped:
                log.warning("hard timeout released %d schedule(s)", reaped)
        if self.settings.history_retention is not None and now_mono >= self._next_prune:
            self._next_prune = now_mono + 3600
            prune = getattr(self.store, "prune_history", None)
            if prune is not None:
                try:
                    pruned = prune(self.settings.history_retention)
                except TickworkError as exc:
                    log.warning("pruning history failed: %s", exc)
                else:
                    if pruned:
                        log.info("pruned %d history rows older than %s", pruned, self.settings.history_retention)
