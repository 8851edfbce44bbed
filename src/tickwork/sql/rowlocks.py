"""Locking schedule rows without waiting for another session's lock.

The writes a node makes between the passes of its loop (a retry's next attempt, a rerun, an
admission, parking a schedule) lock the schedule row they fence on. Waiting for a lock another
session holds (a stray ``SELECT ... FOR UPDATE``) stood the whole loop still for ``lock_timeout``
(1 s), past the start deadline (0.5 s) of every fire the node had claimed ahead: they were taken
over, late, and some skipped (docs/claim-protocol.md, "Locks held by other sessions"). So the row
is locked with ``SKIP LOCKED``, and a row passed over is told apart from one that is gone
(:func:`lock_held_row`); a duty over many rows locks those it can and leaves the rest for its next
turn (:func:`lock_free_rows`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Connection, select

from ..errors import RowLockedError
from .schema import schedules


def lock_free_rows(conn: Connection, *where: ColumnElement[bool]) -> list[int]:
    """Ids of the schedule rows ``where`` picks, locked in ``conn``'s transaction, less those
    another transaction holds locked (passed over, ``SKIP LOCKED``)."""
    return list(conn.scalars(select(schedules.c.id).where(*where).with_for_update(skip_locked=True)))


def lock_held_row(conn: Connection, name: str, *where: ColumnElement[bool]) -> int | None:
    """Lock the schedule row ``where`` names in ``conn``'s transaction; its ``claim_seq``, or
    ``None`` when no row matches (the claim moved on: released, taken over, removed).

    :raises RowLockedError: when the row matches but another transaction holds it locked
    """
    query = select(schedules.c.claim_seq).where(*where)
    seq: Any = conn.scalar(query.with_for_update(skip_locked=True))
    if seq is None and conn.scalar(query) is not None:
        # A plain read sees the row the locking read passed over: it is locked, not gone.
        raise RowLockedError(
            f"{name}: its schedule row is locked by another transaction (a stray SELECT ... FOR UPDATE or a long "
            "transaction of another database session, or another tickwork node's); not waiting for it"
        )
    return None if seq is None else int(seq)
