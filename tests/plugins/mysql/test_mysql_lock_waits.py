"""A lock wait on MySQL / MariaDB lasts ``lock_timeout``, once: error 1205 is not rerun as a
transient error (it was, so a write on a row a console held locked waited 8 times over: 8 s where
``lock_timeout`` said 1 s). The deployment sync's wait for another node's sync is the one wait meant
to outlast it: its locking read lifts the session's lock wait, and puts it back after."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import OperationalError

from tests.support.rowlocks import locked_by_another_session
from tickwork.errors import StoreError
from tickwork.sql.migrations import VERSION_TABLE
from tickwork.testing.contract_helpers import claim_all, spec
from tickwork_mysql.store import MySQLStore


@pytest.fixture
def store(mysql_migrated_url: str) -> Iterator[MySQLStore]:
    s = MySQLStore(mysql_migrated_url)
    s.open()
    yield s
    s.close()


def test_a_lock_wait_timeout_is_not_rerun_and_a_deadlock_is(store: MySQLStore) -> None:
    def error(code: int) -> OperationalError:
        return OperationalError("UPDATE ...", {}, Exception(code, "..."))

    assert not store.operations.is_transient(error(1205))
    assert store.operations.is_transient(error(1213))


def test_a_write_on_a_row_a_console_holds_locked_fails_once_after_lock_timeout(store: MySQLStore) -> None:
    # The give-back of held claims at shutdown: one of the writes that still wait (the rest of
    # the loop's pass locked rows over), bounded by lock_timeout.
    store.add(spec("held"), store.now())
    claims = claim_all(store)
    sent: list[str] = []

    def count(_c: Any, _cur: Any, statement: str, _p: Any, _ctx: Any, _many: bool) -> None:
        sent.append(statement)

    event.listen(store.engine, "before_cursor_execute", count)
    try:
        with locked_by_another_session(store, "held"), pytest.raises(StoreError, match="Lock wait timeout"):
            store.unclaim("n1", claims)
    finally:
        event.remove(store.engine, "before_cursor_execute", count)
    # The transaction ran once: rerun, it sent its statements again (8 times in all).
    assert sent and len(set(sent)) == len(sent), sent


def test_a_sync_waits_for_another_nodes_sync_past_lock_timeout_and_keeps_the_lock_wait(store: MySQLStore) -> None:
    assert store.lock_timeout == 1
    released = threading.Event()

    def hold_for(seconds: float) -> None:
        # Another node's sync: the schema's version row locked for longer than lock_timeout.
        with store.engine.connect() as conn:
            conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE} FOR UPDATE")).all()
            holding.set()
            time.sleep(seconds)
            released.set()
            conn.rollback()

    holding = threading.Event()
    other = threading.Thread(target=hold_for, args=(2.5,))
    other.start()
    try:
        assert holding.wait(10)
        with store.engine.begin() as conn:
            store.lock_schedule_writes(conn)
            # Granted only once the other sync ended, not failed at lock_timeout.
            assert released.is_set()
            assert conn.execute(text("SELECT @@SESSION.innodb_lock_wait_timeout")).scalar_one() == 1
    finally:
        other.join()
