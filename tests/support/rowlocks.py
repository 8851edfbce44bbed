"""A schedule row locked by a database session of its own, as a console user's ``SELECT ... FOR
UPDATE`` would hold it (tests/sql/test_locked_rows.py, tests/engine/test_locked_rows_engine.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import select

from tickwork.sql.schema import schedules
from tickwork.sql.store import SQLStore


@contextmanager
def locked_by_another_session(store: SQLStore, *names: str) -> Iterator[None]:
    """``names``' schedule rows locked by a session of their own, as a console would, until the
    block ends (rolled back)."""
    with store.engine.connect() as conn:
        ids = conn.scalars(select(schedules.c.id).where(schedules.c.name.in_(names))).all()
        conn.rollback()
        # By primary key: InnoDB (repeatable read) locks every row a locking read scans, and a
        # read by name scans the table, locking the other schedules too.
        held = conn.execute(select(schedules.c.id).where(schedules.c.id.in_(ids)).with_for_update()).all()
        assert len(held) == len(names)
        yield
        conn.rollback()
