"""Ending runs: the fenced release of a batch of ends, retries' attempt ends, renewals and parking."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Select,
    Text,
    Update,
    bindparam,
    func,
    literal,
    select,
    update,
)

from ..structures import (
    Claim,
    Fault,
    Finish,
    Outcome,
    RunStatus,
)
from ..structures import cap_error as cap
from .pausing import Pausing
from .retry import log, transient_retry
from .rows import UNHELD
from .schema import UTCDateTime, runs, schedules
from .starting import started_at

#: Seconds to wait before asking again for ends whose schedule rows were locked elsewhere.
BUSY_PAUSES = (0.005, 0.02)


class Ending(Pausing):
    """Ending runs: the fenced release of a batch of ends, retries' attempt ends, renewals and parking."""

    def _release_and_end(self, conn: Connection, finishes: Sequence[Finish]) -> tuple[set[int], set[int]]:
        """Fenced release of each finish's schedule (``release_values``, only while it still
        carries the claim's ``claim_seq`` and is running) and, where it landed, the end of its run
        (status, capped error, ``finished_at`` by the database clock). A schedule row another
        session holds locked is passed over (SKIP LOCKED), not waited for.

        The default reads the fences first, locked (:meth:`_release_and_end_by_fences`); a
        database with a faster batched form overrides it (the hot path of every end).

        :return: the schedule ids whose release landed, and those passed over as locked
        """
        return self._release_and_end_by_fences(conn, finishes, lock=True)

    def _release_and_end_by_fences(
        self, conn: Connection, finishes: Sequence[Finish], *, lock: bool = False
    ) -> tuple[set[int], set[int]]:
        """:meth:`_release_and_end` for a database without UPDATE ... RETURNING or whose
        transaction already holds the write lock: read the fences in one SELECT (``lock``: FOR
        UPDATE SKIP LOCKED, so they cannot change before the UPDATEs), then release the rows that
        still carry ours and end their runs with one executemany of one cached statement each."""
        ids = [f.claim.schedule_id for f in finishes]
        key = f"fences/{lock}"
        read = {
            row.id: (row.claim_seq, row.state)
            for row in conn.execute(self._statement(key, lambda: self._fences(lock)), {"ids": ids})
        }
        current = {sid: seq for sid, (seq, state) in read.items() if state == "running"}
        busy = self.locked_elsewhere(conn, [i for i in ids if i not in read]) if lock else set()
        mine = [f for f in finishes if current.get(f.claim.schedule_id) == f.claim.claim_seq]
        self.statements += 1
        if mine:
            releases = [{"b_id": f.claim.schedule_id, "b_seq": f.claim.claim_seq, "b_next": f.next_fire} for f in mine]
            conn.execute(self._statement("release_many", self._release_many), releases)
            self.statements += 1
        ends = [
            {
                "b_id": f.claim.run_id,
                "b_status": f.outcome.status.value,
                "b_error": cap(f.outcome.error),
                "b_started": f.started_at,
                "b_finished": f.finished_at,
            }
            for f in mine
            if f.claim.run_id is not None
        ]
        if ends:
            conn.execute(self._statement("end_runs_many", self._end_many), ends)
            self.statements += 1
        return {f.claim.schedule_id for f in mine}, busy

    def locked_elsewhere(self, conn: Connection, missing: Sequence[int]) -> set[int]:
        """Of the schedule ids a locking read (SKIP LOCKED) did not return, those that exist:
        passed over because another session holds them (the others were removed)."""
        if not missing:
            return set()
        self.statements += 1
        return set(conn.scalars(select(schedules.c.id).where(schedules.c.id.in_(list(missing)))))

    @staticmethod
    def _fences(lock: bool) -> Select[Any]:
        query = select(schedules.c.id, schedules.c.claim_seq, schedules.c.state).where(
            schedules.c.id.in_(bindparam("ids", expanding=True))
        )
        return query.with_for_update(skip_locked=True) if lock else query

    def _release_many(self) -> Update:
        return (
            update(schedules)
            .where(
                schedules.c.id == bindparam("b_id"),
                schedules.c.claim_seq == bindparam("b_seq"),
                schedules.c.state == "running",
            )
            .values(**self.release_values(bindparam("b_next", type_=UTCDateTime)))
        )

    def _end_many(self) -> Update:
        return (
            update(runs)
            .where(runs.c.id == bindparam("b_id"))
            .values(
                status=bindparam("b_status"),
                error=bindparam("b_error"),
                finished_at=func.coalesce(bindparam("b_finished", type_=UTCDateTime), self.now_expr()),
                started_at=func.coalesce(bindparam("b_started", type_=UTCDateTime), runs.c.started_at),
            )
        )

    def finish(self, node_id: str, finishes: Sequence[Finish]) -> list[bool | None]:
        return self._ask_busy_again(node_id, finishes, self._finish_once(node_id, finishes))

    def _ask_busy_again(self, node_id: str, finishes: Sequence[Finish], ended: list[bool | None]) -> list[bool | None]:
        """``ended`` (the answers for ``finishes``) with the ends passed over as locked asked again."""
        # Rows passed over as locked are mostly another node's claim or end transaction, a few
        # milliseconds long: asked again at once, they land. Only a lock held longer (a stray
        # FOR UPDATE, a long transaction) leaves them to the caller, to be written later.
        for pause in BUSY_PAUSES:
            busy = [i for i, ok in enumerate(ended) if ok is None]
            if not busy:
                break
            time.sleep(pause)
            again = self._finish_once(node_id, [finishes[i] for i in busy])
            for i, ok in zip(busy, again, strict=True):
                ended[i] = ok
        return ended

    @transient_retry
    def _finish_once(self, node_id: str, finishes: Sequence[Finish]) -> list[bool | None]:
        if not finishes:
            return []
        with self._tx() as conn:
            landed, busy = self._release_and_end(conn, finishes)
            return self._settle_ends(conn, node_id, finishes, landed, busy)

    def _settle_ends(
        self, conn: Connection, node_id: str, finishes: Sequence[Finish], landed: set[int], busy: set[int]
    ) -> list[bool | None]:
        """The rest of the ends' transaction once their fenced release ran (``landed``: the
        schedule ids it released, ``busy``: those passed over as locked): the note on the runs of
        fenced-out finishers, the skipped fire times, the counts of ``pause_after_failures`` and
        ``max_runs``. Nothing more is written for ends that landed with none of those.

        :return: the answers of :meth:`finish`
        """
        late_runs = [
            {
                "b_id": f.claim.run_id,
                "b_status": f.outcome.status.value,
                "b_error": cap(
                    f"finished ({f.outcome.status.value}) after its claim was taken over"
                    + (f": {f.outcome.error}" if f.outcome.error else "")
                ),
            }
            for f in finishes
            if f.claim.run_id is not None and f.claim.schedule_id not in landed | busy
        ]
        if late_runs:
            # A fenced-out finisher keeps the status the reaper gave its run, if any.
            conn.execute(
                update(runs)
                .where(runs.c.id == bindparam("b_id"), runs.c.status == "running")
                .values(status=bindparam("b_status"), finished_at=self.now_expr()),
                late_runs,
            )
            # Appended: the reason the reaper or a dead-node release wrote stays readable.
            conn.execute(
                update(runs)
                .where(runs.c.id == bindparam("b_id"))
                .values(
                    error=func.coalesce(runs.c.error + literal("\n", Text), literal("", Text))
                    + bindparam("b_error", type_=Text)
                ),
                late_runs,
            )
            for f in finishes:
                if f.claim.run_id is not None and f.claim.schedule_id not in landed | busy:
                    log.warning(
                        "run %s of %s finished after its claim was taken over; its end changes nothing",
                        f.claim.run_id,
                        f.claim.spec.name,
                    )
        skipped = [
            {
                "schedule_id": f.claim.schedule_id,
                "scheduled_for": t,
                "attempt": 1,
                "claim_seq": f.claim.claim_seq,
                "node": node_id,
                "status": RunStatus.SKIPPED.value,
                "finished_at": f.finished_at or f.claim.claimed_at,
                "error": reason,
                "version": f.claim.version,
            }
            for f in finishes
            if f.claim.schedule_id in landed
            for t, reason in f.skipped
        ]
        if skipped:
            conn.execute(self.insert_ignore(runs), skipped)
            self.statements += 1
        # Only schedules with pause_after_failures or max_runs: the others' ends write nothing
        # more. Last: a finished schedule removed (on_finish) takes its history with it.
        self._count_ends(conn, finishes, landed)
        return [None if f.claim.schedule_id in busy else f.claim.schedule_id in landed for f in finishes]

    @transient_retry
    def end_attempt(self, claim: Claim, outcome: Outcome, started_at: datetime | None = None) -> None:
        values: dict[str, Any] = {
            "status": outcome.status.value,
            "error": cap(outcome.error),
            "finished_at": self.now_expr(),
        }
        if started_at is not None:
            values["started_at"] = started_at
        with self._tx() as conn:
            conn.execute(update(runs).where(runs.c.id == claim.run_id, runs.c.status == "running").values(**values))

    @transient_retry
    def renew(self, node_id: str, claims: Sequence[Claim]) -> None:
        if not claims:
            return
        with self._tx() as conn:
            conn.execute(
                update(schedules)
                .where(
                    schedules.c.id.in_([c.schedule_id for c in claims]),
                    schedules.c.claimed_by == node_id,
                    schedules.c.state == "running",
                    # A fire claimed ahead and not started stays so: renewing it would look like
                    # its start, and neither its holder could start it nor others take it over.
                    schedules.c.claimed_at >= schedules.c.next_fire,
                )
                # Not the bare clock: a start recorded ahead (start_lead) renewed before its fire
                # time would look unstarted again, be taken over and run twice.
                .values(claimed_at=started_at(self.now_expr()))
            )

    @transient_retry
    def park(self, node_id: str, parks: Sequence[tuple[Finish, Fault]]) -> list[bool]:
        if not parks:
            return []
        now = self.now_expr()
        with self._tx() as conn:
            landed: list[bool] = []
            for finish, fault in parks:
                claim = finish.claim
                parked = conn.execute(
                    update(schedules)
                    .where(
                        schedules.c.id == claim.schedule_id,
                        schedules.c.claim_seq == claim.claim_seq,
                        schedules.c.state == "running",
                    )
                    .values(
                        {
                            **UNHELD,
                            "next_fire": None,
                            "fire_requested_at": None,
                            "fault": cap(fault.text, 1000),
                            "fault_kind": fault.kind.value,
                        }
                    )
                ).rowcount
                landed.append(bool(parked))
                if claim.run_id is not None and parked:
                    values: dict[str, Any] = {
                        "status": finish.outcome.status.value,
                        "error": cap(finish.outcome.error),
                        "finished_at": now,
                    }
                    if finish.started_at is not None:
                        values["started_at"] = finish.started_at
                    conn.execute(update(runs).where(runs.c.id == claim.run_id).values(**values))
            if any(landed):
                self._notify(conn)
        return landed
