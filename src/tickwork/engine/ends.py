"""Writing the ends of runs: gathered over a short window, written in one batch, kept in memory
while the database is away."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime

from ..abc import Store
from ..errors import StoreError
from ..structures import Claim, Fault, Finish, RunStatus, SkippedFire
from .clock import DatabaseClock
from .counters import Counters
from .listener import EngineListener
from .runlog import log_run_ends

log = logging.getLogger("tickwork.engine")

#: Seconds before ends passed over because another session held their rows are tried again.
BUSY_RETRY = 0.5
#: Seconds an end may stay passed over before that is a warning. Tickwork's own transactions hold
#: a schedule row for milliseconds, and on MySQL/MariaDB another node's scan skips past rows it
#: only reads: an end passed over once or twice is contention between the nodes, normal under load.
BUSY_WARN_AFTER = 2.0
#: Seconds between two warnings about such ends (while they last).
BUSY_WARN_EVERY = 5.0


class EndWriter:
    """Gathers ends (:meth:`Store.finish`) and parks (:meth:`Store.park`) and writes them in batches.

    An end waits at most ``window`` seconds for others to share its statement and commit: runs that
    end one at a time (a spread load) would otherwise cost a statement and a commit each. It never
    waits past the moment its schedule's next fire could be claimed (its next fire less ``lead``),
    so batching adds no lag to any fire; a full batch (``max_batch``), a park and an end no other
    end can join (the node is idle) are written at once. On a store error the batch is kept and
    written first next time: no end is lost to a database outage, and the claims stay held
    meanwhile, so nobody else fires those schedules.

    :param clock: the database clock (to place a next fire time on the monotonic clock)
    :param window: seconds an end may wait for company (0: written on the pass it arrived)
    :param lead: seconds before a next fire at which some node may claim it (the claim lead)
    :param max_batch: a batch this large is written at once
    :param listener: returns the engine's current listener (tests replace it on a live engine)
    :param released: called with the next fire times of the schedules a batch released
    :param idle: whether no other end can arrive within ``window`` (no run in flight, none due to
        start): ends gathered then are written at once. Batching is for a load that keeps ends
        coming; an end held back on an idle node is only a wider window in which a node that
        dies leaves a finished run without its end (recorded ``abandoned`` by the others).
    :param backfill_ended: called after the ends of backfilled runs were written (the next
        queued fire may start now). Such an end is written at once, never held for company: it
        is a statement of its own anyway (:meth:`Store.end_attempt`), and the backfill's next
        fire waits for it.
    """

    def __init__(
        self,
        store: Store,
        node_id: str,
        counters: Counters,
        listener: Callable[[], EngineListener],
        released: Callable[[list[datetime]], None],
        *,
        clock: DatabaseClock,
        window: float = 0.0,
        lead: float = 0.0,
        max_batch: int = 100,
        idle: Callable[[], bool] = lambda: False,
        backfill_ended: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.node_id = node_id
        self.counters = counters
        self.clock = clock
        self.window = window
        self.lead = lead
        self.max_batch = max_batch
        self._listener = listener
        self._released = released
        self._idle = idle
        self._backfill_ended = backfill_ended
        self._unsaved: list[Finish] = []
        self._unparked: list[tuple[Finish, Fault]] = []
        #: Monotonic time by which the gathered ends must be written (None: nothing gathered).
        self._write_by: float | None = None
        self._passed_over = PassedOver(clock)
        #: The parks passed over as locked and warned about, by claim (schedule id, claim_seq).
        self._parks_passed_over: set[tuple[int, int]] = set()

    @property
    def backlog(self) -> int:
        """Ends and parks gathered or waiting for the database."""
        return len(self._unsaved) + len(self._unparked)

    def drop(self) -> int:
        """Forget every gathered end and park (the others released these claims and recorded
        their runs); how many there were."""
        dropped = self.backlog
        self._unsaved, self._unparked, self._write_by = [], [], None
        return dropped

    def claims(self) -> list[Claim]:
        """The claims whose end is not written yet (still this node's)."""
        return [f.claim for f in self._unsaved] + [f.claim for f, _ in self._unparked]

    def add(
        self, finishes: Sequence[Finish] = (), parks: Sequence[tuple[Finish, Fault]] = (), since: float | None = None
    ) -> None:
        """Gather ``finishes`` and ``parks``, to be written by :meth:`write_due` in time.

        :param since: monotonic time the earliest of them ended (default: now); the window counts from it
        """
        if not finishes and not parks:
            return
        now_mono = self.clock.monotonic()
        # Kept before anything below can fail: an end is never lost.
        self._unsaved += finishes
        self._unparked += parks
        write_by = (now_mono if since is None else min(since, now_mono)) + self.window
        if self._write_by is not None:
            write_by = min(write_by, self._write_by)
        next_fires = [f.next_fire for f in finishes if f.next_fire is not None]
        if next_fires and self.window > 0:
            # By the database clock: its next fire, less the claim lead, is the latest useful moment.
            # Estimated without a read (a failed read here would have to lose or re-add the ends).
            now = self.clock.estimate()
            until = 0.0 if now is None else (min(next_fires) - now).total_seconds() - self.lead
            write_by = min(write_by, now_mono + until)
        # A backfilled run's end: see backfill_ended.
        at_once = parks or len(self._unsaved) >= self.max_batch or any(f.claim.backfill for f in finishes)
        if at_once or (self.window > 0 and self._idle()):
            # Idle: no other end can come within the window, so waiting for company only leaves
            # the end unwritten longer (a node killed meanwhile has these runs recorded abandoned).
            write_by = now_mono
        self._write_by = write_by

    def seconds_until_due(self) -> float | None:
        """Seconds until the gathered ends must be written (0: now); None when nothing is gathered."""
        if self._write_by is None:
            return None
        return max(0.0, self._write_by - self.clock.monotonic())

    def write_due(self, *, keep_backfills: bool = False) -> bool:
        """Write what was gathered if its time has come.

        :param keep_backfills: leave backfilled runs' ends gathered (due at once): the pass
            carries them in its take of backfilled fires (:meth:`take_backfill_ends`)
        :return: whether a write was attempted
        :raises tickwork.errors.StoreError: after keeping what was not written
        """
        if self._write_by is None or self._write_by > self.clock.monotonic():
            return False
        self.write(keep_backfills=keep_backfills)
        return True

    def write(
        self,
        finishes: Sequence[Finish] = (),
        parks: Sequence[tuple[Finish, Fault]] = (),
        *,
        keep_backfills: bool = False,
    ) -> None:
        """Write ``finishes`` and ``parks`` now, after anything gathered or kept from before
        (``keep_backfills``: see :meth:`write_due`).

        :raises tickwork.errors.StoreError: after keeping what was not written (due at once)
        """
        self._unparked += parks
        self._unsaved += finishes
        if keep_backfills:
            kept = [f for f in self._unsaved if f.claim.backfill]
            if kept:
                self._unsaved = [f for f in self._unsaved if not f.claim.backfill]
                try:
                    self.write()
                finally:
                    self._unsaved = kept + self._unsaved
                    self._write_by = self.clock.monotonic()
                return
        if not self._unsaved and not self._unparked:
            self._write_by = None
            return
        self._write_by = self.clock.monotonic()  # whatever a failure keeps is due again at once
        if self._unparked:
            self._park()
        batch, self._unsaved = self._unsaved, []
        if any(f.claim.backfill for f in batch):
            batch = self._write_backfills(batch)
        if batch:
            try:
                ended = self.store.finish(self.node_id, batch)
            except StoreError:
                self._unsaved = batch + self._unsaved
                raise
            if self._settle(batch, ended):
                return
        # Parks passed over as locked are asked again after BUSY_RETRY seconds.
        self._write_by = self.clock.monotonic() + BUSY_RETRY if self._unparked else None

    def _park(self) -> None:
        """Write the gathered parks; keep those passed over because another transaction holds
        their schedules' rows locked (waiting for the lock would stall the loop), warning once
        for each.

        :raises tickwork.errors.StoreError: after keeping them all, to be written next time
        """
        parks, self._unparked = self._unparked, []
        try:
            answers = self.store.park(self.node_id, parks)
        except StoreError:
            self._unparked = parks + self._unparked
            raise
        done = [(f, ok) for (f, _), ok in zip(parks, answers, strict=True) if ok is not None]
        busy = [p for p, ok in zip(parks, answers, strict=True) if ok is None]
        self._unparked = busy + self._unparked
        for f, _ in busy:
            key = (f.claim.schedule_id, f.claim.claim_seq)
            if key not in self._parks_passed_over:
                self._parks_passed_over.add(key)
                log.warning(
                    "%s: cannot park it yet: its schedule row is locked by another transaction (a stray SELECT ... "
                    "FOR UPDATE or a long transaction of another database session); trying again every %gs",
                    f.claim.spec.name,
                    BUSY_RETRY,
                )
        for f, _ in done:
            self._parks_passed_over.discard((f.claim.schedule_id, f.claim.claim_seq))
        landed = [bool(ok) for _, ok in done]
        self.counters.parked += landed.count(True)
        self.counters.finished += len(done)
        self._log([f for f, _ in done], landed, parked=True)
        report_ends(self._listener(), [f for f, _ in done])

    def take_riders(self) -> list[Finish]:
        """Take the gathered ends that may ride on a start statement (:meth:`Store.start_round`),
        whatever their window: written sooner than it asks, they cost no statement of their own.
        Parks and backfilled runs' ends are left to :meth:`write`. Every end taken must be
        handed back to :meth:`settle` or :meth:`put_back`."""
        riders = [f for f in self._unsaved if not f.claim.backfill]
        if riders:
            self._unsaved = [f for f in self._unsaved if f.claim.backfill]
            if not self._unsaved and not self._unparked:
                self._write_by = None
        return riders

    def put_back(self, finishes: Sequence[Finish]) -> None:
        """Keep ends taken by :meth:`take_riders` that were not written, due at once."""
        if finishes:
            self._unsaved = list(finishes) + self._unsaved
            self._write_by = self.clock.monotonic()

    def settle(self, finishes: Sequence[Finish], ended: Sequence[bool | None]) -> None:
        """Account for ends written by a start statement, as :meth:`write` does for its own."""
        if finishes and self._settle(list(finishes), ended):
            return
        if not self._unsaved and not self._unparked:
            self._write_by = None

    def _settle(self, batch: list[Finish], ended: Sequence[bool | None]) -> bool:
        """Count, report and log a written batch (``ended``: :meth:`Store.finish`'s answers);
        keep the ends passed over as locked. :return: whether some were kept so"""
        self.counters.end_batches += 1
        busy = [f for f, ok in zip(batch, ended, strict=True) if ok is None]
        if busy:
            # Kept to be written again after BUSY_RETRY seconds (waiting for the lock would
            # stall the loop).
            self._unsaved = busy + self._unsaved
            self._write_by = self.clock.monotonic() + BUSY_RETRY
            self._passed_over.note(busy)
            batch = [f for f, ok in zip(batch, ended, strict=True) if ok is not None]
        else:
            self._passed_over.clear()  # none passed over: the next one starts a new count
        landed = [ok for ok in ended if ok is not None]
        self.counters.finished += len(batch)
        self.counters.fenced_out += landed.count(False)
        report_ends(self._listener(), batch)
        released = [f.next_fire for f, ok in zip(batch, landed, strict=True) if ok and f.next_fire is not None]
        if released:
            self._released(released)
        self._log(batch, landed)
        return bool(busy)

    def _write_backfills(self, batch: list[Finish]) -> list[Finish]:
        """Write the ends of the backfilled runs in ``batch`` (one transaction, by the store's
        clock: they hold no claim to release; a take of nothing carrying them,
        :meth:`Store.take_backfills`); returns the others.

        :raises tickwork.errors.StoreError: after keeping what was not written
        """
        backfills = [f for f in batch if f.claim.backfill]
        others = [f for f in batch if not f.claim.backfill]
        try:
            self.store.take_backfills(self.node_id, limit=0, buckets=None, ends=backfills)
        except StoreError:
            self._unsaved = backfills + others + self._unsaved
            raise
        self.backfills_written(backfills)
        return others

    def take_backfill_ends(self) -> list[Finish]:
        """Take the gathered ends of backfilled runs, to be carried by a take of backfilled
        fires (:meth:`Store.take_backfills`, ``ends``): written in its transaction, the slots
        they free are taken at once. Every end taken must be handed back to
        :meth:`backfills_written` or :meth:`put_back`."""
        carried = [f for f in self._unsaved if f.claim.backfill]
        if carried:
            self._unsaved = [f for f in self._unsaved if not f.claim.backfill]
            if not self._unsaved and not self._unparked:
                self._write_by = None
        return carried

    def backfills_written(self, finishes: Sequence[Finish]) -> None:
        """Account for ends of backfilled runs written (by :meth:`write` or carried by a take):
        counted, reported to the listener, logged; the backfill runner told a slot freed."""
        if not finishes:
            return
        self.counters.finished += len(finishes)
        report_ends(self._listener(), finishes)
        log_run_ends(self.node_id, finishes, [True] * len(finishes))
        self._backfill_ended()

    def _log(self, finishes: Sequence[Finish], landed: Sequence[bool], parked: bool = False) -> None:
        if parked:
            for f, ok in zip(finishes, landed, strict=True):
                if ok:
                    log.error("%s: parked (no further fires until fixed): %s", f.claim.spec.name, f.outcome.error)
        log_run_ends(self.node_id, finishes, landed)


class PassedOver:
    """Ends passed over because another transaction holds their schedules' rows locked: since
    when each has been, and a warning once one has been for :data:`BUSY_WARN_AFTER` seconds
    (then every :data:`BUSY_WARN_EVERY` seconds while it lasts)."""

    def __init__(self, clock: DatabaseClock) -> None:
        self._clock = clock
        #: Monotonic time of the last warning.
        self._warned = -1e9
        #: Since when each end has been passed over, by its claim (schedule id, claim_seq).
        self._since: dict[tuple[int, int], float] = {}

    def clear(self) -> None:
        self._since = {}

    def note(self, busy: list[Finish]) -> None:
        """``busy`` were passed over again (the others are not any more)."""
        now_mono = self._clock.monotonic()
        since = self._since
        self._since = {
            key: since.get(key, now_mono) for key in ((f.claim.schedule_id, f.claim.claim_seq) for f in busy)
        }
        stuck = now_mono - min(self._since.values())
        if stuck >= BUSY_WARN_AFTER and now_mono - self._warned >= BUSY_WARN_EVERY:
            self._warned = now_mono
            names = sorted({f.claim.spec.name for f in busy})
            log.warning(
                "cannot write the end of %d run(s) (%s): their schedules' rows have stayed locked for %.1fs by "
                "another transaction (a stray SELECT ... FOR UPDATE or a long transaction of another database "
                "session, or a long one of another tickwork node); writing them again every %.1fs meanwhile",
                len(busy),
                ", ".join(names[:10]) + (" ..." if len(names) > 10 else ""),
                stuck,
                BUSY_RETRY,
            )


def report_ends(listener: EngineListener, finishes: Sequence[Finish]) -> None:
    """Tell ``listener`` which runs ended and which fire times were recorded as skipped."""
    results = [f for f in finishes if f.outcome.status is not RunStatus.SKIPPED]
    skipped = [
        SkippedFire(f.claim.spec.name, f.claim.scheduled_for, f.outcome.error or "skipped", f.claim.spec.namespace)
        for f in finishes
        if f.outcome.status is RunStatus.SKIPPED
    ]
    skipped += [
        SkippedFire(f.claim.spec.name, at, reason, f.claim.spec.namespace) for f in finishes for at, reason in f.skipped
    ]
    if results:
        listener.runs_finished(results)
    if skipped:
        listener.fires_skipped(skipped)
