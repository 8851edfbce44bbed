"""Writing the ends of runs: one batch per pass, kept in memory while the database is away."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from ..abc import Store
from ..errors import StoreError
from ..listener import EngineListener, SkippedFire
from ..runlog import log_run_ends
from ..structures import Claim, Finish, RunStatus

log = logging.getLogger("tickwork.engine")


@dataclass
class Counters:
    """What the engine did, for logs, tests and benchmarks."""

    fired: int = 0
    finished: int = 0
    skipped: int = 0
    fenced_out: int = 0
    parked: int = 0


class EndWriter:
    """Writes ends (:meth:`Store.finish`) and parks (:meth:`Store.park`) in batches.

    On a store error the batch is kept and written first next time: no end is lost to a database
    outage, and the claims stay held meanwhile, so nobody else fires those schedules.

    :param listener: returns the engine's current listener (tests replace it on a live engine)
    :param released: called with the next fire times of the schedules a batch released
    """

    def __init__(
        self,
        store: Store,
        node_id: str,
        counters: Counters,
        listener: Callable[[], EngineListener],
        released: Callable[[list[datetime]], None],
    ) -> None:
        self.store = store
        self.node_id = node_id
        self.counters = counters
        self._listener = listener
        self._released = released
        self._unsaved: list[Finish] = []
        self._unparked: list[tuple[Finish, str]] = []

    @property
    def backlog(self) -> int:
        """Ends and parks waiting for the database."""
        return len(self._unsaved) + len(self._unparked)

    def claims(self) -> list[Claim]:
        """The claims whose end is not written yet (still this node's)."""
        return [f.claim for f in self._unsaved] + [f.claim for f, _ in self._unparked]

    def write(self, finishes: Sequence[Finish] = (), parks: Sequence[tuple[Finish, str]] = ()) -> None:
        """Write ``finishes`` and ``parks`` after anything kept from before.

        :raises tickwork.errors.StoreError: after keeping what was not written
        """
        self._unparked += parks
        if self._unparked:
            parked, self._unparked = self._unparked, []
            try:
                landed = self.store.park(self.node_id, parked)
            except StoreError:
                self._unparked = parked + self._unparked
                self._unsaved += finishes
                raise
            self.counters.parked += landed.count(True)
            self.counters.finished += len(parked)
            self._log([f for f, _ in parked], landed, parked=True)
            self._report([f for f, _ in parked])
        batch = self._unsaved + list(finishes)
        if not batch:
            return
        self._unsaved = []
        try:
            landed = self.store.finish(self.node_id, batch)
        except StoreError:
            self._unsaved = batch
            raise
        self.counters.finished += len(batch)
        self.counters.fenced_out += landed.count(False)
        self._report(batch)
        released = [f.next_fire for f, ok in zip(batch, landed, strict=True) if ok and f.next_fire is not None]
        if released:
            self._released(released)
        self._log(batch, landed)

    def _report(self, finishes: Sequence[Finish]) -> None:
        """Tell the listener which runs ended and which fire times were recorded as skipped."""
        listener = self._listener()
        results = [f for f in finishes if f.outcome.status is not RunStatus.SKIPPED]
        skipped = [
            SkippedFire(f.claim.spec.name, f.claim.scheduled_for, f.outcome.error or "skipped")
            for f in finishes
            if f.outcome.status is RunStatus.SKIPPED
        ]
        skipped += [SkippedFire(f.claim.spec.name, at, reason) for f in finishes for at, reason in f.skipped]
        if results:
            listener.runs_finished(results)
        if skipped:
            listener.fires_skipped(skipped)

    def _log(self, finishes: Sequence[Finish], landed: Sequence[bool], parked: bool = False) -> None:
        if parked:
            for f, ok in zip(finishes, landed, strict=True):
                if ok:
                    log.error("%s: parked (no further fires until fixed): %s", f.claim.spec.name, f.outcome.error)
        log_run_ends(self.node_id, finishes, landed)
