"""``Operations.insert_many``: a batch of rows lands exactly as an executemany of them would, on
every SQL store. PostgreSQL sends the batch as one ``INSERT ... SELECT`` (scalars for columns
alike in every row, arrays for the others, a JSON array for a JSON column that varies), MySQL and
MariaDB as one ``INSERT ... SELECT ... FROM JSON_TABLE`` of the rows as one JSON document, and a
first sync's batches of schedules and versions are each one such statement, not an executemany."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Double,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    event,
    select,
)
from sqlalchemy.exc import IntegrityError

from tests.support.stores import make_store
from tickwork.scheduling.sync import add_many
from tickwork.scheduling.versions import changes, definition
from tickwork.sql.jsontext import Encoded
from tickwork.sql.schema import UTCDateTime
from tickwork.sql.store import SQLStore
from tickwork.structures import ScheduleSpec

T = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)

scratch = Table(
    "tw_test_insert_many",
    MetaData(),
    Column("id", BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True),
    Column("k", String(50), nullable=False, unique=True),
    Column("n", Integer, nullable=True),
    Column("x", Double(), nullable=True),
    Column("flag", Boolean, nullable=True),
    Column("at", UTCDateTime, nullable=True),
    Column("doc", JSON, nullable=True),
    Column("opt", JSON(none_as_null=True), nullable=True),
    Column("note", Text, nullable=True),
)

COLUMNS = ["k", "n", "x", "flag", "at", "doc", "opt", "note"]


def _row(k: str, **values: Any) -> dict[str, Any]:
    base = {"n": 1, "x": 1.5, "flag": True, "at": T, "doc": {"a": 1}, "opt": None, "note": "same"}
    return {"k": k, **base, **values}


#: Batches that take each path: every column varying (None among JSON values, JSON lists, quotes
#: and backslashes in text and JSON), every column alike, one row, JSON already encoded, 1 and True.
BATCHES: dict[str, list[dict[str, Any]]] = {
    "varying": [
        _row("a", n=None, x=2.25, flag=False, at=None, doc=[1, "two", {"three": 3}], opt={"o": [1]}, note='q"uo\\te'),
        _row("b", n=7, x=None, flag=None, at=T + timedelta(days=400), doc={"s": 'x"y\\z'}, opt=None, note=None),
        _row("c", n=-3, x=0.0, flag=True, at=T - timedelta(microseconds=1), doc=None, opt=[], note="{a,b}"),
        _row("d", doc=[], opt={"nested": {"list": [None, True]}}, note=""),
    ],
    "alike": [_row(k) for k in "abcde"],
    "one": [_row("solo", doc=[1, 2], opt={"x": None})],
    "json lists": [_row(k, doc=[i, [i]]) for i, k in enumerate("abc")],
    "encoded": [_row(k, doc=Encoded('{"t": "' + k + '", "q": "\\""}')) for k in "abc"],
    "one and true": [_row("a", n=1, flag=True, doc=1), _row("b", n=True, flag=1, doc=True)],
    "unicode": [
        _row("ü", note="héllo ✓ 🎉 end", doc={"ключ": "値 🎉"}, opt=["\t\n"]),
        _row("ß", note="'; DROP TABLE x; --", doc="just a string", x=1e-300, n=-(2**31)),
    ],
    "long text": [_row("long", note="x" * 60_000, doc={"big": "y" * 70_000})],
}


@pytest.fixture(params=["sqlite", "postgres", "mysql"])
def sql_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SQLStore]:
    store = make_store(request.param, "optimistic", request, tmp_path)
    assert isinstance(store, SQLStore)
    with store.engine.begin() as conn:
        scratch.create(conn)
    yield store
    with store.engine.begin() as conn:
        scratch.drop(conn)
    store.close()


def _read(store: SQLStore, prefix: str) -> list[tuple[Any, ...]]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(*[scratch.c[c] for c in COLUMNS]).where(scratch.c.k.startswith(prefix)).order_by(scratch.c.id)
        ).all()
    # The key without its prefix, and each JSON value as a plain structure.
    return [(r[0][len(prefix) :], *r[1:]) for r in rows]


@pytest.mark.parametrize("batch", list(BATCHES))
def test_a_batch_lands_as_an_executemany_of_it_would(sql_store: SQLStore, batch: str) -> None:
    rows = BATCHES[batch]
    with sql_store.engine.begin() as conn:
        conn.execute(scratch.insert(), [r | {"k": "many-" + r["k"]} for r in rows])
        sql_store.operations.insert_many(conn, scratch, [r | {"k": "batch-" + r["k"]} for r in rows])
    expected = _read(sql_store, "many-")
    assert len(expected) == len(rows)
    assert _read(sql_store, "batch-") == expected


def test_skip_existing_skips_the_rows_whose_key_is_taken_and_inserts_the_rest(sql_store: SQLStore) -> None:
    with sql_store.engine.begin() as conn:
        sql_store.operations.insert_many(conn, scratch, [_row("b", note="first")])
        sql_store.operations.insert_many(
            conn, scratch, [_row("a", n=1), _row("b", note="second"), _row("c", n=3)], skip_existing=True
        )
    assert [(k, n, note) for k, n, *_, note in _read(sql_store, "")] == [
        ("b", 1, "first"),
        ("a", 1, "same"),
        ("c", 3, "same"),
    ]


def test_without_skip_existing_a_taken_key_fails_the_batch(sql_store: SQLStore) -> None:
    with sql_store.engine.begin() as conn:
        sql_store.operations.insert_many(conn, scratch, [_row("b")])
    with pytest.raises(IntegrityError), sql_store.engine.begin() as conn:
        sql_store.operations.insert_many(conn, scratch, [_row("a"), _row("b", n=2)])
    assert [r[0] for r in _read(sql_store, "")] == ["b"]


def test_an_empty_batch_sends_nothing(sql_store: SQLStore) -> None:
    sent: list[str] = []
    event.listen(sql_store.engine, "before_cursor_execute", lambda *a: sent.append(a[2]))
    with sql_store.engine.begin() as conn:
        sql_store.operations.insert_many(conn, scratch, [])
    assert [s for s in sent if "tw_test_insert_many" in s] == []


@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_a_first_sync_writes_each_batch_in_one_statement(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store = make_store(kind, "skip-locked", request, tmp_path)
    assert isinstance(store, SQLStore)
    inserts: list[tuple[str, bool]] = []

    def seen(_c: Any, _cur: Any, statement: str, _p: Any, _ctx: Any, many: bool) -> None:
        if statement.startswith("INSERT"):
            inserts.append((statement.split()[2], many))

    specs = [
        ScheduleSpec(name=f"job_{i:04d}", trigger_kind="cron", expression="0 0 1 1 *", target=f"m:job_{i}")
        for i in range(2500)
    ]
    try:
        event.listen(store.engine, "before_cursor_execute", seen)
        add_many(store, specs, by="test")
        event.remove(store.engine, "before_cursor_execute", seen)
        # Batches of 1,000: three of schedules, three of their first versions, none an executemany.
        assert inserts == [("tickwork_schedules", False)] * 3 + [("tickwork_schedule_versions", False)] * 3
        versions = store.versions("job_1234")
        assert [(v.version, v.definition["target"], v.by) for v in versions] == [(1, "m:job_1234", "test")]
        assert store.get("job_2499").spec.target == "m:job_2499"
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres", "mysql"])
def test_first_versions_sharing_a_shape_are_one_statement_per_batch(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The database joins the shape's JSON around each new row's target: no executemany of the
    versions, one statement per batch of 1,000 and shape; a target JSON must escape, and a spec
    with arguments, are written with their own text, and every version reads as its own."""
    store = make_store(kind, "optimistic", request, tmp_path)
    assert isinstance(store, SQLStore)
    inserts: list[tuple[str, bool]] = []

    def seen(_c: Any, _cur: Any, statement: str, _p: Any, _ctx: Any, many: bool) -> None:
        if statement.startswith("INSERT INTO tickwork_schedule_versions"):
            inserts.append((" SELECT " in statement, many))

    plain = [
        ScheduleSpec(name=f"p{i:04d}", trigger_kind="cron", expression="0 0 1 1 *", target=f"m:p{i}")
        for i in range(1500)
    ]
    hourly = [
        ScheduleSpec(name=f"h{i}", trigger_kind="cron", expression="0 * * * *", target=f"m:h{i}") for i in range(3)
    ]
    own = [
        ScheduleSpec(name="escaped", trigger_kind="cron", expression="0 0 1 1 *", target='m:"ü"'),
        ScheduleSpec(name="args", trigger_kind="cron", expression="0 0 1 1 *", target="m:a", arguments={"x": [1]}),
    ]
    try:
        event.listen(store.engine, "before_cursor_execute", seen)
        add_many(store, [*plain, *hourly, *own], by="test")
        event.remove(store.engine, "before_cursor_execute", seen)
        # One joined INSERT ... SELECT for the hourly shape, two for the 1,500 of the other (batches
        # of 1,000), then the two with their own text in one batch.
        assert len(inserts) == 4 and inserts[:3] == [(True, False)] * 3, inserts
        for s in [plain[0], plain[1499], hourly[2], *own]:
            (first,) = store.versions(s.name)
            assert (first.version, first.by, first.definition) == (1, "test", definition(s)), s.name
            assert first.changes == changes(None, definition(s)), s.name
    finally:
        store.close()


def _sent_inserts(store: SQLStore) -> list[tuple[str, bool]]:
    """The INSERTs into the scratch table from here on: (statement, executemany)."""
    sent: list[tuple[str, bool]] = []

    def seen(_c: Any, _cur: Any, statement: str, _p: Any, _ctx: Any, many: bool) -> None:
        if statement.startswith("INSERT INTO tw_test_insert_many"):
            sent.append((statement, many))

    event.listen(store.engine, "before_cursor_execute", seen)
    return sent


#: The tests of MySQL's own path take the scratch table's store on MySQL only.
on_mysql = pytest.mark.parametrize("sql_store", ["mysql"], indirect=True)


@on_mysql
@pytest.mark.parametrize("batch", list(BATCHES))
def test_mysql_sends_a_batch_as_one_json_table_statement(sql_store: SQLStore, batch: str) -> None:
    sent = _sent_inserts(sql_store)
    with sql_store.engine.begin() as conn:
        sql_store.operations.insert_many(conn, scratch, BATCHES[batch])
    assert len(sent) == 1 and not sent[0][1] and "JSON_TABLE" in sent[0][0], sent


@on_mysql
def test_mysql_falls_back_to_an_executemany_for_a_value_json_cannot_carry_exactly(sql_store: SQLStore) -> None:
    """A Decimal (exact, where a JSON number would be read back as a double) goes through the
    driver's own quoting, and lands all the same."""
    from decimal import Decimal

    sent = _sent_inserts(sql_store)
    with sql_store.engine.begin() as conn:
        sql_store.operations.insert_many(conn, scratch, [_row("a", x=Decimal("0.1")), _row("b")])
    assert [many for _, many in sent] == [True]
    assert [(k, x) for k, _, x, *_ in _read(sql_store, "")] == [("a", 0.1), ("b", 1.5)]


@pytest.mark.parametrize(
    ("mariadb", "version", "has"),
    [
        (True, (10, 11, 19), True),
        (True, (10, 6, 0), True),
        (True, (10, 5, 27), False),
        (False, (8, 0, 36), True),
        (False, (8, 0, 3), False),
        (False, (5, 7, 44), False),
        (False, None, False),
    ],
)
def test_json_table_is_used_only_where_the_server_has_it(mariadb: bool, version: Any, has: bool) -> None:
    from sqlalchemy.dialects.mysql.pymysql import MySQLDialect_pymysql

    from tickwork_mysql import jsontable

    dialect = MySQLDialect_pymysql()
    dialect.server_version_info = version
    dialect.is_mariadb = mariadb
    assert jsontable.available(dialect) is has


@on_mysql
@pytest.mark.parametrize(
    "bad", [{"k": "k" * 51}, {"n": "not a number"}, {"x": "1.5x"}], ids=["too long", "int", "float"]
)
def test_mysql_refuses_a_value_its_column_cannot_take_as_an_executemany_would(
    sql_store: SQLStore, bad: dict[str, Any]
) -> None:
    """Not truncated nor made NULL by the table function: the INSERT converts each value into its
    column under the server's strict mode, as it converts an executemany's."""
    from sqlalchemy.exc import DBAPIError

    rows = [_row("a"), _row("b") | bad]
    for insert in (
        lambda conn: conn.execute(scratch.insert(), rows),
        lambda conn: sql_store.operations.insert_many(conn, scratch, rows),
    ):
        with pytest.raises(DBAPIError), sql_store.engine.begin() as conn:
            insert(conn)
    assert _read(sql_store, "") == []
