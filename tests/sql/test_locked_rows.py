"""A schedule row another database session holds locked (a ``psql`` user's ``SELECT ... FOR
UPDATE``, a long report transaction) stalls none of the node's duties run between its passes: each
passes the row over and does it at a later turn, without waiting for the lock
(docs/claim-protocol.md, "Locks held by other sessions").

A duty that waited would fail after the store's ``lock_timeout`` (1 s) with a lock timeout; the
loop would have stood still that long, past the start deadline (0.5 s) of every fire the node
had claimed ahead, which were then taken over (seen in tests/system/test_failover.py, where the
renewal waited). So each test here fails on a waiting duty by its error, not by a timing.

PostgreSQL and MySQL/MariaDB only: SQLite has no row locks (one writer holds the whole file, a
wait its ``busy_timeout`` bounds)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import OperationalError

from tests.support.rowlocks import locked_by_another_session
from tests.support.stores import make_store
from tickwork.errors import RowLockedError
from tickwork.sql.rowlocks import lock_held_row
from tickwork.sql.schema import schedules
from tickwork.sql.store import SQLStore
from tickwork.structures import Admission, Fault, Finish, Outcome, Pause, RunStatus, ScheduleSpec, ScheduleState
from tickwork.testing.contract_helpers import claim_all, spec


def claimed_at(store: SQLStore) -> dict[str, datetime]:
    with store.engine.connect() as conn:
        return {r.name: r.claimed_at for r in conn.execute(select(schedules.c.name, schedules.c.claimed_at))}


def test_the_renewal_passes_a_locked_row_over_and_renews_it_once_it_is_free(server_store: SQLStore) -> None:
    t = server_store.now()
    server_store.add(spec("locked"), t)
    server_store.add(spec("free"), t)
    claims = claim_all(server_store)
    assert {c.spec.name for c in claims} == {"locked", "free"}
    before = claimed_at(server_store)
    with locked_by_another_session(server_store, "locked"):
        server_store.renew("n1", claims)
        during = claimed_at(server_store)
    assert during["free"] > before["free"]
    assert during["locked"] == before["locked"]
    server_store.renew("n1", claims)
    assert claimed_at(server_store)["locked"] > before["locked"]


def test_the_resume_of_ended_pauses_passes_a_locked_row_over_and_resumes_it_once_it_is_free(
    server_store: SQLStore,
) -> None:
    t = server_store.now()
    for name in ("locked", "free"):
        server_store.add(spec(name), t)
        server_store.set_enabled(name, False, None, Pause("short", until=t + timedelta(milliseconds=1)))

    def next_fire(_spec: ScheduleSpec, now: datetime) -> datetime:
        return now + timedelta(minutes=1)

    server_store.now()  # the pauses' ends passed by the database clock before the first resume
    with locked_by_another_session(server_store, "locked"):
        assert [s.name for s in server_store.resume_expired(next_fire)] == ["free"]
    assert [s.name for s in server_store.resume_expired(next_fire)] == ["locked"]
    assert all(s.spec.enabled for s in server_store.list_schedules())


def test_a_backfill_take_passes_a_locked_schedule_over_and_takes_its_fires_once_it_is_free(
    server_store: SQLStore,
) -> None:
    t = server_store.now()
    past = (t - timedelta(hours=1)).replace(second=0, microsecond=0)
    for name in ("locked", "free"):
        server_store.add(spec(name, enabled=False), None)
        assert server_store.queue_backfill(name, [past]) == [past]
    with locked_by_another_session(server_store, "locked"):
        taken = server_store.take_backfills("n1", limit=10, buckets=None)
    assert [(c.spec.name, c.scheduled_for) for c in taken] == [("free", past)]
    again = server_store.take_backfills("n1", limit=10, buckets=None)
    assert [(c.spec.name, c.scheduled_for) for c in again] == [("locked", past)]


def test_the_lock_of_these_tests_is_one_the_stores_own_writes_wait_for(server_store: SQLStore) -> None:
    """The tests above would pass vacuously if the console's lock did not hold the row: a plain
    write of that row waits for it and fails at the store's lock timeout."""
    server_store.add(spec("locked"), server_store.now())
    with (
        locked_by_another_session(server_store, "locked"),
        pytest.raises(OperationalError, match=r"(?i)lock (wait )?timeout"),
        server_store.engine.begin() as conn,
    ):
        conn.execute(text("UPDATE tickwork_schedules SET claimed_by = 'x' WHERE name = 'locked'"))


def test_a_retrys_start_is_not_waited_for_and_lands_once_the_row_is_free(server_store: SQLStore) -> None:
    server_store.add(spec("locked"), server_store.now())
    (claim,) = claim_all(server_store)
    retry = replace(claim, attempt=2, run_id=None)
    with (
        locked_by_another_session(server_store, "locked"),
        pytest.raises(RowLockedError, match="locked: its schedule row"),
    ):
        server_store.start_attempt("n1", retry)
    run_id = server_store.start_attempt("n1", retry)
    assert run_id is not None
    assert [(r.attempt, r.status) for r in server_store.history(schedule="locked")] == [
        (2, RunStatus.RUNNING),
        (1, RunStatus.RUNNING),
    ]


def test_an_admission_is_not_waited_for(server_store: SQLStore) -> None:
    server_store.add(spec("locked", max_concurrent=2, overlap="allow"), server_store.now())
    (claim,) = claim_all(server_store)
    with locked_by_another_session(server_store, "locked"), pytest.raises(RowLockedError):
        server_store.admit("n1", Admission(claim, release=False))
    assert server_store.admit("n1", Admission(claim, release=False)) is None


def test_a_park_passes_a_locked_row_over_and_parks_it_once_it_is_free(server_store: SQLStore) -> None:
    t = server_store.now()
    server_store.add(spec("locked"), t)
    server_store.add(spec("free"), t)
    claims = {c.spec.name: c for c in claim_all(server_store)}
    parks = [
        (Finish(claims[n], Outcome(RunStatus.FAILED, "bad zone"), None), Fault("TriggerError: bad zone"))
        for n in ("locked", "free")
    ]
    with locked_by_another_session(server_store, "locked"):
        assert server_store.park("n1", parks) == [None, True]
    assert server_store.park("n1", parks[:1]) == [True]
    assert {s.name: s.fault for s in server_store.list_schedules()} == {
        "locked": "TriggerError: bad zone",
        "free": "TriggerError: bad zone",
    }


def test_a_locked_row_is_told_apart_from_a_row_gone(server_store: SQLStore) -> None:
    server_store.add(spec("locked"), server_store.now())
    (claim,) = claim_all(server_store)
    fence = (schedules.c.id == claim.schedule_id, schedules.c.claim_seq == claim.claim_seq)
    with server_store.engine.begin() as conn:
        assert lock_held_row(conn, "locked", *fence) == claim.claim_seq
        assert lock_held_row(conn, "locked", schedules.c.id == claim.schedule_id + 1000) is None
    with (
        locked_by_another_session(server_store, "locked"),
        server_store.engine.begin() as conn,
        pytest.raises(RowLockedError),
    ):
        lock_held_row(conn, "locked", *fence)


def test_a_dead_nodes_release_passes_a_locked_row_over_and_keeps_its_record_until_it_is_free(
    server_store: SQLStore,
) -> None:
    t = server_store.now()
    server_store.add(spec("locked"), t)
    server_store.add(spec("free"), t)
    server_store.heartbeat("n2")
    assert len(claim_all(server_store, "n2")) == 2
    server_store.now()  # its heartbeat is older than 0 s from here on

    def statuses() -> dict[str, RunStatus]:
        return {r.schedule: r.status for r in server_store.history()}

    with locked_by_another_session(server_store, "locked"):
        assert server_store.release_dead_node("n2", 0.0, "n2 died") == 1
        assert statuses() == {"locked": RunStatus.RUNNING, "free": RunStatus.ABANDONED}
        # Judged again at the next beat: still dead, the locked row still passed over.
        assert server_store.release_dead_node("n2", 0.0, "n2 died") == 0
    assert "n2" in [n.id for n in server_store.nodes()]
    assert server_store.release_dead_node("n2", 0.0, "n2 died") == 1
    assert statuses() == {"locked": RunStatus.ABANDONED, "free": RunStatus.ABANDONED}
    assert "n2" not in [n.id for n in server_store.nodes()]
    assert all(s.state is ScheduleState.IDLE for s in server_store.list_schedules())


@pytest.mark.parametrize(
    ("kind", "claim"),
    [
        *(("postgres", c) for c in ("skip-locked", "optimistic", "unique-fire", "advisory", "mark")),
        *(("mysql", c) for c in ("skip-locked", "optimistic", "unique-fire")),
    ],
)
def test_every_claim_strategy_claims_around_a_locked_row_and_takes_it_once_it_is_free(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str, claim: str
) -> None:
    store = make_store(kind, claim, request, tmp_path)
    assert isinstance(store, SQLStore)
    try:
        t = store.now()
        for name in ("a-locked", "b-free", "c-free"):
            store.add(spec(name), t)

        def claim_every() -> list[str]:
            # ``mark`` takes one row per transaction: claim until nothing more comes.
            names: list[str] = []
            while got := claim_all(store):
                names += [c.spec.name for c in got]
            return sorted(names)

        with locked_by_another_session(store, "a-locked"):
            assert claim_every() == ["b-free", "c-free"]
        assert claim_every() == ["a-locked"]
        assert sorted((r.schedule, r.status) for r in store.history()) == [
            ("a-locked", RunStatus.RUNNING),
            ("b-free", RunStatus.RUNNING),
            ("c-free", RunStatus.RUNNING),
        ]
    finally:
        store.close()
