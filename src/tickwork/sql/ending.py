"""Ending runs: the fenced release of a batch of ends, retries' attempt ends, renewals and parking."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Select,
    String,
    Text,
    Update,
    bindparam,
    case,
    func,
    literal,
    select,
    tuple_,
    update,
)

from ..errors import RowLockedError
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
from .rowlocks import lock_free_rows, lock_held_row
from .rows import UNHELD
from .schema import UTCDateTime, runs, schedules
from .starting import started_at

#: Seconds to wait before asking again for ends whose schedule rows were locked elsewhere.
BUSY_PAUSES = (0.005, 0.02)
#: Most rows one multi-row release or end statement writes (its parameters: a few per row).
FOLD_ROWS = 512
#: The numbers of rows a multi-row statement is built for, a batch padded up to the next: each
#: size is built and compiled once. Built per batch (a CASE of literals), the statements cost a
#: node 0.1-0.15 s of CPU more per 1,000 fires than the executemany they replace (MariaDB, 1,000
#: fires at once, 3 nodes), in making and compiling them.
FOLD_SIZES = (8, 32, 128, FOLD_ROWS)


def fold_size(rows: int) -> int:
    """The size of :data:`FOLD_SIZES` a batch of ``rows`` is padded to."""
    return next(n for n in FOLD_SIZES if n >= rows)


def case_by_key(prefix: str, key: ColumnElement[Any], size: int, *types: Any) -> list[ColumnElement[Any]]:
    """For each of ``types``, ``CASE key WHEN :{prefix}_k0 THEN :{prefix}_{j}_0 ... END`` over
    ``size`` bound pairs (:func:`by_key` fills them): a value picked by the row's key, NULL for
    a key not listed."""
    keys = [bindparam(f"{prefix}_k{i}", type_=BigInteger) for i in range(size)]
    return [
        case({k: bindparam(f"{prefix}_{j}_{i}", type_=type_) for i, k in enumerate(keys)}, value=key)
        for j, type_ in enumerate(types)
    ]


def by_key(prefix: str, rows: Sequence[tuple[int, tuple[Any, ...]]], size: int) -> dict[str, Any]:
    """The parameters of :func:`case_by_key` for ``rows`` (each a key and its values), padded to
    ``size`` with keys no row has (ids are positive) and NULL values."""
    width = len(rows[0][1]) if rows else 0
    params: dict[str, Any] = {}
    for i in range(size):
        k, values = rows[i] if i < len(rows) else (-1 - i, (None,) * width)
        params[f"{prefix}_k{i}"] = k
        for j, v in enumerate(values):
            params[f"{prefix}_{j}_{i}"] = v
    return params


T = TypeVar("T")


def chunked(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


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
        still carry ours in one statement and end their runs in another (up to
        :data:`FOLD_ROWS` rows each)."""
        ids = [f.claim.schedule_id for f in finishes]
        key = f"fences/{lock}"
        read = {
            row.id: (row.claim_seq, row.state)
            for row in conn.execute(self._statement(key, lambda: self._fences(lock)), {"ids": ids})
        }
        self.statements += 1
        busy = self.locked_elsewhere(conn, [i for i in ids if i not in read]) if lock else set()
        return self._release_and_end_read(conn, finishes, read), busy

    def _release_and_end_read(
        self, conn: Connection, finishes: Sequence[Finish], read: dict[int, tuple[int, str]]
    ) -> set[int]:
        """The writes of :meth:`_release_and_end_by_fences` once the fences were read (locked, in
        this transaction): ``read`` maps schedule ids to their ``claim_seq`` and ``state``.

        :return: the schedule ids released
        """
        current = {sid: seq for sid, (seq, state) in read.items() if state == "running"}
        mine = [f for f in finishes if current.get(f.claim.schedule_id) == f.claim.claim_seq]
        # Multi-row statements, not executemany: PyMySQL sends an executemany of an UPDATE as
        # one statement per row (3.7 statements per fire at 1,000 fires at once on MariaDB).
        for chunk in chunked(mine, FOLD_ROWS):
            size = fold_size(len(chunk))
            params = by_key("r", [(f.claim.schedule_id, (f.next_fire,)) for f in chunk], size)
            params["r_ids"] = [f.claim.schedule_id for f in chunk]
            params["r_fences"] = [(f.claim.schedule_id, f.claim.claim_seq) for f in chunk]
            conn.execute(self._statement(f"release_rows/{size}", partial(self._release_rows, size)), params)
            self.statements += 1
        ended = [f for f in mine if f.claim.run_id is not None]
        for chunk in chunked(ended, FOLD_ROWS):
            size = fold_size(len(chunk))
            values = [
                (f.claim.run_id, (f.outcome.status.value, cap(f.outcome.error), f.finished_at, f.started_at))
                for f in chunk
                if f.claim.run_id is not None
            ]
            params = by_key("e", values, size)
            params["e_ids"] = [run_id for run_id, _ in values]
            conn.execute(self._statement(f"end_rows/{size}", partial(self._end_rows, size)), params)
            self.statements += 1
        return {f.claim.schedule_id for f in mine}

    def _release_rows(self, size: int) -> Update:
        """One fenced release of up to ``size`` schedules (``r_ids``, their fences ``r_fences``):
        each row's next fire picked by its id (:func:`case_by_key`), each row still required
        to carry the claim's ``claim_seq`` and to be running (the fences were read locked, so
        this is the same check again, on the row version written)."""
        (next_fire,) = case_by_key("r", schedules.c.id, size, UTCDateTime)
        return (
            update(schedules)
            .where(
                schedules.c.id.in_(bindparam("r_ids", expanding=True)),
                tuple_(schedules.c.id, schedules.c.claim_seq).in_(bindparam("r_fences", expanding=True)),
                schedules.c.state == "running",
            )
            .values(**self.release_values(next_fire))
        )

    def _end_rows(self, size: int) -> Update:
        """One end of up to ``size`` runs (``e_ids``; their releases landed in this
        transaction): each row's status, error, end and start picked by its id. A run with no
        end time given ends at the database clock, one with no start keeps its own."""
        status, error, finished, started = case_by_key("e", runs.c.id, size, String(16), Text, UTCDateTime, UTCDateTime)
        return (
            update(runs)
            .where(runs.c.id.in_(bindparam("e_ids", expanding=True)))
            .values(
                status=status,
                error=error,
                finished_at=func.coalesce(finished, self.now_expr()),
                started_at=func.coalesce(started, runs.c.started_at),
            )
        )

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
        renewable = (
            schedules.c.id.in_([c.schedule_id for c in claims]),
            schedules.c.claimed_by == node_id,
            schedules.c.state == "running",
            # A fire claimed ahead and not started stays so: renewing it would look like
            # its start, and neither its holder could start it nor others take it over.
            schedules.c.claimed_at >= schedules.c.next_fire,
        )
        with self._tx() as conn:
            # Rows another session holds locked (a stray SELECT ... FOR UPDATE) are renewed at
            # the next turn, not waited for: the renewal runs between the loop's passes, and a
            # wait of lock_timeout (1 s) there let the fires this node had claimed ahead pass
            # their start deadline (0.5 s), be taken over and skipped (docs/claim-protocol.md,
            # "Locks held by other sessions"). The reaper skips such rows too, so one is not
            # released for its stale renewal while it stays locked.
            ids = lock_free_rows(conn, *renewable)
            if ids:
                conn.execute(
                    update(schedules)
                    .where(schedules.c.id.in_(ids), *renewable)
                    # Not the bare clock: a start recorded ahead (start_lead) renewed before its
                    # fire time would look unstarted again, be taken over and run twice.
                    .values(claimed_at=started_at(self.now_expr()))
                )

    @transient_retry
    def park(self, node_id: str, parks: Sequence[tuple[Finish, Fault]]) -> list[bool | None]:
        if not parks:
            return []
        now = self.now_expr()
        with self._tx() as conn:
            landed: list[bool | None] = []
            for finish, fault in parks:
                claim = finish.claim
                # Passed over, not waited for, while another session holds the row locked: the
                # end writer asks again (the ends' own rule, in the loop's thread as they are).
                fence = (schedules.c.id == claim.schedule_id, schedules.c.claim_seq == claim.claim_seq)
                try:
                    lock_held_row(conn, claim.spec.name, *fence, schedules.c.state == "running")
                except RowLockedError:
                    landed.append(None)
                    continue
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
