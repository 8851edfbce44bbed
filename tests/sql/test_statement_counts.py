"""What a claim sends. MySQL/MariaDB (no ``UPDATE ... RETURNING``): the ``skip-locked`` claim
reads the due ids and the clock in one locking read, takes them by id, reads back the rows won,
then records their runs: five statements where it sent six (the clock was read on its own), four
on MariaDB (its ``INSERT ... RETURNING`` answers the run ids, which MySQL reads back), and one
for a claim that finds nothing (it was two); a heartbeat's refresh is one statement (the
UPDATE's reply carries the time it wrote), where it was the UPDATE and a read. The list of
namespaces that the fair claim takes turns between is one statement whatever the number of
namespaces, on every SQL store (it was one per namespace and one more)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from tests.support.stores import make_store
from tickwork.sql.store import SQLStore
from tickwork.structures import ScheduleSpec


def _spec(name: str, namespace: str = "default") -> ScheduleSpec:
    return ScheduleSpec(name=name, namespace=namespace, trigger_kind="cron", expression="* * * * *", target="m:f")


@pytest.fixture(params=["sqlite", "postgres", "mysql"])
def sql_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SQLStore]:
    store = make_store(request.param, "optimistic", request, tmp_path)
    assert isinstance(store, SQLStore)
    yield store
    store.close()


class Sent:
    """The statements ``store`` sends inside the ``with`` block."""

    def __init__(self, store: SQLStore) -> None:
        self.store = store
        self.statements: list[str] = []

    def _on_execute(self, _c: Any, _cur: Any, statement: str, _p: Any, _ctx: Any, _many: bool) -> None:
        self.statements.append(statement)

    def __enter__(self) -> Sent:
        event.listen(self.store.engine, "before_cursor_execute", self._on_execute)
        return self

    def __exit__(self, *_exc: object) -> None:
        event.remove(self.store.engine, "before_cursor_execute", self._on_execute)

    def claims(self) -> list[str]:
        """Those of the claim itself, not the read of the namespace list that precedes it at most
        once a second."""
        return [s for s in self.statements if "known_namespaces" not in s]


@pytest.fixture
def mysql_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SQLStore]:
    store = make_store("mysql", "skip-locked", request, tmp_path)
    assert isinstance(store, SQLStore)
    yield store
    store.close()


def test_a_mysql_claim_reads_the_clock_in_its_locking_read(mysql_store: SQLStore) -> None:
    store = mysql_store
    now = store.now()
    for i in range(5):
        store.add(_spec(f"s{i}"), now - timedelta(seconds=1))
    seqs = {f"s{i}": store.get(f"s{i}").claim_seq for i in range(5)}
    with Sent(store) as sent:
        claims = store.claim_due("n1", limit=10, buckets=None)
    assert len(claims) == 5
    assert len(sent.claims()) == (4 if store.features.insert_returning else 5), sent.claims()
    assert sum("FOR UPDATE" in s.upper() for s in sent.claims()) == 1
    # What the claim returns is what it wrote: the new fence token and claim time, as stored.
    for claim in claims:
        row = store.get(claim.spec.name)
        assert claim.claim_seq == row.claim_seq == seqs[claim.spec.name] + 1
        assert claim.claimed_at == row.claimed_at and claim.claimed_at >= claim.scheduled_for
        assert claim.run_id is not None
    # A second claim finds nothing: one statement.
    with Sent(store) as sent:
        assert store.claim_due("n2", limit=10, buckets=None) == []
    assert len(sent.claims()) == 1, sent.claims()


def test_a_mysql_claim_ahead_takes_only_what_is_due_within_it(mysql_store: SQLStore) -> None:
    store = mysql_store
    now = store.now()
    store.add(_spec("soon"), now + timedelta(seconds=20))
    store.add(_spec("later"), now + timedelta(seconds=120))
    (claim,) = store.claim_due("n1", limit=10, buckets=None, ahead=60)
    assert claim.spec.name == "soon" and claim.early
    assert store.get("soon").claimed_at == claim.claimed_at < claim.scheduled_for


def test_the_namespace_list_is_one_statement(sql_store: SQLStore) -> None:
    store = sql_store
    now = store.now()
    for namespace in ("b", "a", "c.d", "a-b"):
        store.add(_spec("x", namespace), now + timedelta(hours=1))
        store.add(_spec("y", namespace), now + timedelta(hours=1))
    with Sent(store) as sent:
        names = store.known_namespaces()
    assert names == ("a", "a-b", "b", "c.d")
    # (SQLite's BEGIN IMMEDIATE is no statement of the store's.)
    assert len([s for s in sent.statements if "tickwork_schedules" in s]) == 1, sent.statements


def test_a_mysql_heartbeat_refresh_is_one_statement(mysql_store: SQLStore) -> None:
    store = mysql_store
    first = store.heartbeat("n1")
    with Sent(store) as sent:
        refreshed = store.refresh_heartbeat("n1")
        again = store.heartbeat("n1")
    assert len(sent.statements) == 2, sent.statements
    # The value answered is the one written, by the database clock.
    assert refreshed is not None and first < refreshed < again
    (record,) = [n for n in store.nodes() if n.id == "n1"]
    assert record.heartbeat_at == again
    assert store.refresh_heartbeat("nobody") is None


def test_a_mysql_claim_tells_the_fires_already_recorded_from_those_it_recorded(mysql_store: SQLStore) -> None:
    """MariaDB's ``INSERT ... RETURNING`` returns a row the insert skipped as it already was: a
    fire whose run row exists (here: abandoned with its node, still due) must come back without
    a run id, as on every store, and the one this claim recorded with its own."""
    store = mysql_store
    now = store.now()
    for name in ("a", "b"):
        store.add(_spec(name), now - timedelta(seconds=1))
    first = store.claim_due("n1", limit=10, buckets=None)
    assert {c.spec.name for c in first} == {"a", "b"} and all(c.run_id is not None for c in first)
    assert store.release_node("n1", "n1 died") == 2
    store.add(_spec("c"), now - timedelta(seconds=1))
    again = {c.spec.name: c for c in store.claim_due("n2", limit=10, buckets=None)}
    assert set(again) == {"a", "b", "c"}
    assert again["a"].run_id is None and again["b"].run_id is None
    (run,) = [r for r in store.history() if r.schedule == "c"]
    assert again["c"].run_id == run.id


def test_a_drained_mysql_claim_reads_the_next_due_time_in_its_read_back(mysql_store: SQLStore) -> None:
    """The node reads the next due time after every claim that drained what was due; on MySQL
    the claim's read back of the rows it won reads it as well (no statement of its own), and a
    full claim, which reads on, does not."""
    store = mysql_store
    now = store.now()
    for i in range(3):
        store.add(_spec(f"due{i}"), now - timedelta(seconds=1))
    store.add(_spec("later"), now + timedelta(minutes=5))
    told: list[Any] = []
    with Sent(store) as sent:
        full = store.claim_due("n1", limit=2, buckets=None, next_due=told.append)
    assert len(full) == 2 and told == []
    with Sent(store) as sent:
        (last,) = store.claim_due("n1", limit=10, buckets=None, next_due=told.append)
    assert last.spec.name == "due2"
    assert told == [store.get("later").next_fire] == [store.next_due(buckets=None)]
    expected = 4 if store.features.insert_returning else 5
    assert len(sent.claims()) == expected, sent.claims()
    assert not any(s.lstrip().upper().startswith("SELECT (SELECT MIN") for s in sent.claims())
