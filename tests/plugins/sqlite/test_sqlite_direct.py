"""The SQLite store's lean paths: hot statements executed on the driver's connection
(tickwork.sql.prepared) and one kept connection for its transactions (tickwork_sqlite.connection).
Each must behave like the SQLAlchemy path it replaces: the same rows and types, the same errors,
the same events."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Integer, bindparam, create_engine, event, func, insert, literal, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.exc import IntegrityError, OperationalError

from tests.support.stores import T0
from tickwork.errors import StoreError
from tickwork.sql.prepared import DirectPrepared, Prepared
from tickwork.sql.schema import UTCDateTime, runs, schedules
from tickwork.structures import Finish, Outcome, RunStatus, ScheduleSpec
from tickwork.testing import FakeClock
from tickwork_sqlite.connection import OneConnection
from tickwork_sqlite.store import SQLiteStore


def spec(name: str) -> ScheduleSpec:
    return ScheduleSpec(name=name, trigger_kind="cron", expression="* * * * *", target="mod:func")


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Any:
    s = SQLiteStore(str(tmp_path / "t.db"), clock=clock)
    s.open()
    yield s
    s.close()


def both(store: SQLiteStore, statement: Any) -> tuple[Prepared, DirectPrepared]:
    return Prepared(statement), DirectPrepared(statement, store.engine.dialect)


def test_direct_rows_and_types_match_sqlalchemy_s(store: SQLiteStore) -> None:
    for n in range(3):
        store.add(spec(f"s{n}"), T0 + timedelta(minutes=n))
    query = (
        select(
            schedules.c.id,
            schedules.c.name,
            schedules.c.next_fire,
            schedules.c.enabled,
            schedules.c.arguments,
            literal(7).label("seven"),
        )
        .where(schedules.c.next_fire >= bindparam("from", type_=UTCDateTime))
        .where(store.operations.one_of(schedules.c.id, "ids"))
        .order_by(schedules.c.id)
    )
    plain, direct = both(store, query)
    params = {"from": T0 + timedelta(minutes=1), "ids": [1, 2, 3, 99]}
    with store.engine.begin() as conn:
        expected = [tuple(r) for r in plain.rows(conn, params)]
        assert [tuple(r) for r in direct.rows(conn, params)] == expected
        assert direct.mappings(conn, params) == [dict(m) for m in plain.mappings(conn, params)]
        assert direct.scalars(conn, params) == plain.scalars(conn, params) == [2, 3]
    (_, name, next_fire, enabled, arguments, seven) = expected[0]
    assert (name, next_fire, enabled, arguments, seven) == ("s1", T0 + timedelta(minutes=1), True, {}, 7)
    assert direct.keys == ("id", "name", "next_fire", "enabled", "arguments", "seven")


def test_a_clock_bound_at_each_execution_is_read_at_each_direct_execution(store: SQLiteStore) -> None:
    moments = iter([T0, T0 + timedelta(seconds=5)])
    direct = DirectPrepared(
        select(bindparam("now", callable_=lambda: next(moments), type_=UTCDateTime)), store.engine.dialect
    )
    with store.engine.begin() as conn:
        assert direct.scalars(conn, {}) == [T0]
        assert direct.scalars(conn, {}) == [T0 + timedelta(seconds=5)]


def test_a_missing_parameter_is_named(store: SQLiteStore) -> None:
    direct = DirectPrepared(select(schedules.c.id).where(schedules.c.id == bindparam("wanted")), store.engine.dialect)
    with store.engine.begin() as conn, pytest.raises(KeyError, match="'wanted'"):
        direct.rows(conn, {})


def test_direct_errors_are_sqlalchemy_s(store: SQLiteStore) -> None:
    store.add(spec("dup"), T0)
    direct = DirectPrepared(
        insert(schedules).from_select(list(schedules.c.keys())[1:], select(*list(schedules.c)[1:])),
        store.engine.dialect,
    )
    with store.engine.begin() as conn, pytest.raises(IntegrityError, match="UNIQUE"):
        direct.rows(conn, {})


def test_direct_executions_reach_cursor_listeners(store: SQLiteStore) -> None:
    seen: list[str] = []
    event.listen(store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    direct = DirectPrepared(select(func.count()).select_from(runs), store.engine.dialect)
    with store.engine.begin() as conn:
        assert direct.scalars(conn, {}) == [0]
    assert direct.sql in seen
    assert "BEGIN IMMEDIATE" in seen  # the store's BEGIN, also issued on the driver's connection


def test_listeners_keep_state_on_the_context_of_a_direct_execution(store: SQLiteStore) -> None:
    # What sentry-sdk's and OpenTelemetry's SQLAlchemy integrations do: write on the context in
    # before_cursor_execute, read it back in after_cursor_execute. A None context made them raise.
    pairs: list[tuple[str, str]] = []

    def before(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        context.span = statement

    def after(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        pairs.append((context.span, statement))

    event.listen(store.engine, "before_cursor_execute", before)
    event.listen(store.engine, "after_cursor_execute", after)
    direct = DirectPrepared(select(func.count()).select_from(runs), store.engine.dialect)
    with store.engine.begin() as conn:
        assert direct.scalars(conn, {}) == [0]
    assert (direct.sql, direct.sql) in pairs
    assert ("BEGIN IMMEDIATE", "BEGIN IMMEDIATE") in pairs
    assert all(span == statement for span, statement in pairs)


def test_sentry_sdks_sqlalchemy_integration_runs_on_a_sqlite_store(tmp_path: Path) -> None:
    # In a process of its own: sentry_sdk.init() instruments every engine for the process's life.
    script = textwrap.dedent(
        f"""
        import sentry_sdk
        from sentry_sdk.integrations.sqlalchemy import SqlalchemyIntegration
        sentry_sdk.init(dsn="http://key@127.0.0.1:9/1", integrations=[SqlalchemyIntegration()],
                        traces_sample_rate=1.0, default_integrations=False)
        from tickwork_sqlite.store import SQLiteStore
        store = SQLiteStore({str(tmp_path / "s.db")!r})
        with sentry_sdk.start_transaction(name="t"):
            store.open()
            print(store.now().year > 2000, len(store.list_schedules()))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "0"]


def test_direct_execution_refuses_what_it_cannot_run() -> None:
    sqlite_dialect = create_engine("sqlite://").dialect
    expanding = select(schedules.c.id).where(schedules.c.id.in_(bindparam("ids", expanding=True)))
    with pytest.raises(ValueError, match="cannot expand list parameters"):
        DirectPrepared(expanding, sqlite_dialect)
    with pytest.raises(ValueError, match="positional parameter style"):
        DirectPrepared(select(literal(1, Integer)), postgresql.psycopg.dialect())


def test_a_burst_through_the_direct_paths_fires_each_schedule_once(store: SQLiteStore, clock: FakeClock) -> None:
    for n in range(250):
        store.add(spec(f"b{n:03}"), T0)
    clock.advance(3600)
    claimed = []
    while batch := store.claim_due("n1", limit=100, buckets=None):
        claimed.extend(batch)
        landed = store.finish("n1", [Finish(c, Outcome(RunStatus.SUCCEEDED), T0 + timedelta(days=1)) for c in batch])
        assert all(landed)
    assert sorted(c.spec.name for c in claimed) == [f"b{n:03}" for n in range(250)]
    history = store.history(limit=1000)
    assert len(history) == 250 and {r.status for r in history} == {RunStatus.SUCCEEDED}
    assert all(r.finished_at is not None and r.started_at is not None for r in history)


# -- one kept connection ----------------------------------------------------------------------------


def test_transactions_of_several_threads_take_turns_on_the_kept_connection(store: SQLiteStore) -> None:
    errors: list[BaseException] = []

    def add(prefix: str) -> None:
        try:
            for n in range(40):
                store.add(spec(f"{prefix}{n}"), T0)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(p,)) for p in "abc"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.list_schedules()) == 120


def test_a_thread_waits_for_another_s_transaction_then_fails_by_name(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'c.db'}")
    one = OneConnection(lambda: engine, timeout=0.2)
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with one.begin():
            inside.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    inside.wait(5)
    started = time.monotonic()
    locked = re.escape("database is locked: another thread's transaction held it for 0.2 s")
    with pytest.raises(OperationalError, match=locked), one.begin():
        pass
    assert time.monotonic() - started >= 0.2
    release.set()
    holder.join()
    with one.begin() as conn:  # free again
        assert conn.exec_driver_sql("SELECT 1").scalar() == 1
    one.close()
    engine.dispose()


def test_after_a_failed_transaction_the_next_takes_a_fresh_connection(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'c.db'}")
    one = OneConnection(lambda: engine, timeout=1)
    with one.begin() as conn:
        first = conn
        conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
    with pytest.raises(RuntimeError), one.begin() as conn:
        assert conn is first  # kept between transactions
        conn.exec_driver_sql("INSERT INTO t VALUES (1)")
        raise RuntimeError("boom")
    with one.begin() as conn:
        assert conn is not first and first.closed
        assert conn.exec_driver_sql("SELECT count(*) FROM t").scalar() == 0  # rolled back
    one.close()
    engine.dispose()


def test_another_process_s_write_lock_is_a_store_error_after_busy_timeout(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "locked.db"), busy_timeout=0.2)
    store.open()
    try:
        holder = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreError, match="sqlite store: database is locked"):
            store.claim_due("n1", limit=10, buckets=None)
        holder.execute("ROLLBACK")
        holder.close()
        assert store.claim_due("n1", limit=10, buckets=None) == []  # the store recovers
    finally:
        store.close()
