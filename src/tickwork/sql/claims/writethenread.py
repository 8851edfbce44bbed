"""Claiming on a database without ``UPDATE ... RETURNING`` (MySQL has none, MariaDB none for
UPDATE; :attr:`Features.update_returning <tickwork.sql.features.Features.update_returning>`):
every claim reads the database clock once, binds it into the statements as a value, and finds
the rows it won by that exact claim time.

Reading the clock first is safe for invariant 2: the bound value is at or behind the database
clock at the moment the UPDATE re-checks due-ness, so nothing is ever taken early; at worst a
fire that became due during the claim's round trip waits for the next claim.

``skip-locked`` reads that clock in its locking read (:func:`locked_due`), still before the
UPDATE re-checks due-ness, and takes the ids read as every claim here does (:func:`take`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, RowMapping, bindparam, delete, literal, select, tuple_, update

from ..rowlocks import lock_free_rows
from ..schema import UTCDateTime, runs, schedules
from .base import (
    CLAIMED_COLUMNS,
    RUN_COLUMNS,
    ClaimRequest,
    ClaimSQL,
    claim_assignment,
    due_filter,
    due_ids,
    started_runs,
)


def request(node_id: str, limit: int, owned: Any, now: datetime, ahead: float, sql: ClaimSQL) -> ClaimRequest:
    """A claim request whose clock is the value ``now`` (read from the database just before)."""
    due_by = None
    if ahead > 0:
        due_by = bindparam("claim_due_by", now + timedelta(seconds=ahead), type_=UTCDateTime)
    return ClaimRequest(node_id, limit, owned, bindparam("claim_now", now, type_=UTCDateTime), due_by, sql=sql)


def candidates(conn: Connection, req: ClaimRequest) -> list[int]:
    """Ids of due schedules, earliest first, read without a lock (``optimistic``: the UPDATE of
    :func:`take` re-checks each, of those :func:`lockable_now` locks; ``skip-locked`` locks them
    in :func:`locked_due`)."""
    return list(conn.scalars(due_ids(req)).all())


def lockable_now(conn: Connection, ids: Sequence[int]) -> list[int]:
    """Of ``ids``, those no other transaction holds locked, locked now (``FOR UPDATE SKIP
    LOCKED``): the UPDATE that follows would wait for the others, and a stray lock (a console's
    ``SELECT ... FOR UPDATE``) failed the whole claim at ``lock_timeout``, eight times over as
    MySQL's lock waits are retried (docs/claim-protocol.md, "Locks held by other sessions")."""
    if not ids:
        return []
    free = set(lock_free_rows(conn, schedules.c.id.in_(ids)))
    return [i for i in ids if i in free]


def locked_due(conn: Connection, req: ClaimRequest) -> tuple[list[int], datetime]:
    """Ids of up to ``claim_limit`` due schedules, earliest first, locked with ``FOR UPDATE SKIP
    LOCKED`` (rows another node is claiming are passed over, never waited for), and the clock
    ``req.now`` (an expression: the database's) as the statement read it: the clock read and
    the read of the ids in one statement, where they were two (one of them in every claim,
    including the many that find nothing)."""
    query = due_ids(req).add_columns(req.now.label("claim_clock")).with_for_update(skip_locked=True)
    rows = conn.execute(query).all()
    if not rows:
        return [], datetime.min
    return [r.id for r in rows], rows[0].claim_clock


def take(
    conn: Connection, req: ClaimRequest, ids: Sequence[int], now: datetime, also: Sequence[Any] = ()
) -> list[RowMapping]:
    """Mark the due ones of ``ids`` claimed by this node; return the rows won, each with the
    columns ``also`` (scalar subqueries read in the same statement, after the UPDATE).

    The UPDATE re-checks due-ness on the newest version of each row (docs/claim-protocol.md); the
    rows it changed are the ones now held by this node with this claim's exact time.
    """
    if not ids:
        return []
    conn.execute(update(schedules).where(schedules.c.id.in_(ids), due_filter(req)).values(**claim_assignment(req)))
    # Read back, not inferred from what was read before: the rows won, as written (their new
    # fence tokens), whatever happened to them between the read of the ids and the UPDATE.
    return list(
        conn.execute(
            select(*CLAIMED_COLUMNS, *also).where(
                schedules.c.id.in_(ids),
                schedules.c.state == "running",
                schedules.c.claimed_by == req.node_id,
                schedules.c.claimed_at == bindparam("won_at", now, type_=UTCDateTime),
            )
        )
        .mappings()
        .all()
    )


def unique_fire(conn: Connection, req: ClaimRequest, now: datetime) -> tuple[list[RowMapping], dict[int, int]]:
    """The ``unique-fire`` strategy: insert each candidate's run row first (the unique key picks
    one winner per fire), then mark the schedules; a run whose schedule changed in between is
    deleted. Returns the won rows and the run ids this claim inserted."""
    found = conn.execute(
        select(schedules.c.id, schedules.c.next_fire, schedules.c.claim_seq)
        .where(due_filter(req))
        .order_by(schedules.c.next_fire)
        .limit(req.limit)
    ).all()
    # Locked by key, passing over what another transaction holds: the run insert's foreign key
    # check and the UPDATE below would wait for a stray lock (a console's SELECT ... FOR UPDATE),
    # failing the whole claim. Exclusive, not shared: two claimers holding shared locks on one
    # row would deadlock upgrading them in the UPDATE. So claimers pass over each other's
    # candidates; the history's unique key still decides every fire. Not in the read above: as a
    # locking scan of the due index it took the fires' lag p99 from 64-76 ms to 638-643 ms on
    # MariaDB (docs/benchmarks.md, "A locked row claimed around by every strategy").
    free = set(lockable_now(conn, [c.id for c in found]))
    found = [c for c in found if c.id in free]
    if not found:
        return [], {}
    ids = [c.id for c in found]
    # Exactly the versions read above: a row another node claimed and released meanwhile has a
    # new next fire and fence. Reading its latest version here (INSERT ... SELECT and UPDATE read
    # the newest committed row, the SELECT above a snapshot) wrote a run row for a fire this
    # claim never took, which then fenced that fire out for its real claimer (seen under load in
    # test_claim_contention: a claim came back without its run).
    same = tuple_(schedules.c.id, schedules.c.next_fire, schedules.c.claim_seq).in_(
        [(c.id, c.next_fire, c.claim_seq) for c in found]
    )
    fires = started_runs(
        schedules.c.id,
        schedules.c.next_fire,
        schedules.c.claim_seq + 1,
        literal(req.node_id),
        req.now,
        schedules.c.version,
    ).where(same, due_filter(req))
    conn.execute(req.sql.insert_ignore(runs).from_select(list(RUN_COLUMNS), fires))
    # Ours: the fire's run written under the fence token this claim is about to take.
    inserted = {
        r.schedule_id: r.id
        for r in conn.execute(
            select(runs.c.id, runs.c.schedule_id).where(
                tuple_(runs.c.schedule_id, runs.c.scheduled_for, runs.c.claim_seq, runs.c.node).in_(
                    [(c.id, c.next_fire, c.claim_seq + 1, req.node_id) for c in found]
                ),
                runs.c.attempt == 1,
            )
        )
    }
    conn.execute(update(schedules).where(same, due_filter(req)).values(**claim_assignment(req)))
    won = list(
        conn.execute(
            select(*CLAIMED_COLUMNS).where(
                schedules.c.id.in_(ids),
                schedules.c.state == "running",
                schedules.c.claimed_by == req.node_id,
                schedules.c.claimed_at == bindparam("won_at", now, type_=UTCDateTime),
            )
        )
        .mappings()
        .all()
    )
    lost = set(inserted) - {r["id"] for r in won}
    if lost:
        # Changed between the insert and the update (e.g. disabled): that fire did not happen.
        conn.execute(delete(runs).where(runs.c.id.in_([inserted[s] for s in lost])))
    return won, {s: r for s, r in inserted.items() if s not in lost}
