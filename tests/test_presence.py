"""A node's presence (tickwork.sql.presence): the session-level lock that tells the others at once
that a killed node is gone. On real PostgreSQL and MariaDB servers, with two stores standing for
two nodes; heartbeat ages on a fake clock, sessions ended for real (closed, or killed by the
server as a restart would)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.conftest import T0, FakeClock, make_store
from tickwork.sql.presence import presence_name
from tickwork.sql.store import SQLStore
from tickwork.structures import RunStatus, ScheduleSpec, ScheduleState

SERVERS = [pytest.param("postgres", id="postgres"), pytest.param("mysql", id="mysql")]


@pytest.fixture
def stores(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Callable[[], SQLStore]]:
    """Stores on one database of the server under test, each standing for a node."""
    made: list[SQLStore] = []

    def new() -> SQLStore:
        store = make_store(request.param, "skip-locked", request, tmp_path, clock=clock)
        assert isinstance(store, SQLStore)
        made.append(store)
        return store

    yield new
    for store in made:
        store.close()


def held_by_b(store: SQLStore) -> None:
    """A schedule claimed by node ``b`` (its run recorded ``running``)."""
    store.add(ScheduleSpec(name="job", trigger_kind="cron", expression="* * * * *", target="mod:func"), T0)
    store.heartbeat("b")
    (claim,) = store.claim_due("b", limit=10, buckets=None)
    assert claim.run_id is not None


def session_ended(check: Callable[[], bool]) -> bool:
    """Whether ``check`` holds within 5 s: a server frees a closed session's locks as it handles
    the disconnect, a moment after the client closed (as a node's next beat would find)."""
    deadline = time.monotonic() + 5
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def end_session_on_the_server(store: SQLStore, node_id: str) -> None:
    """End ``node_id``'s presence session from another session, as a database restart (or an
    administrator) would, without the node knowing."""
    name = presence_name(store.engine.url.database or "", node_id)
    with store.engine.begin() as conn:
        if store.engine.dialect.name == "postgresql":
            ended = conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                    "AND pid <> pg_backend_pid() AND classid = :ns AND objid = :key"
                ),
                {"ns": 0x7469636B + 2, "key": presence_key_unsigned(name)},
            ).all()
        else:
            holder = conn.execute(text("SELECT IS_USED_LOCK(:n)"), {"n": name}).scalar()
            assert holder is not None
            conn.execute(text(f"KILL CONNECTION {int(holder)}"))
            ended = [holder]
    assert ended, "no presence session found"


def held(store: SQLStore, node_id: str) -> float | None:
    """``store.hold_presence(node_id)`` once its keeper has checked (or taken) the lock: the age of
    the lock, or ``None`` when it is not held."""
    return store.hold_presence(node_id, wait=5.0)


def presence_key_unsigned(name: str) -> int:
    from tickwork_postgres.operations import presence_key

    # pg_locks shows the keys as oid (unsigned 32 bits).
    return presence_key(name) & 0xFFFFFFFF


@pytest.mark.parametrize("stores", SERVERS, indirect=True)
def test_a_node_is_released_once_its_session_ended_and_not_before(
    stores: Callable[[], SQLStore], clock: FakeClock
) -> None:
    a, b = stores(), stores()
    held_by_b(b)
    assert held(b, "b") is not None
    assert held(a, "a") is not None
    clock.advance(2)  # b's heartbeat is 2 s old
    assert a.release_absent_node("b", 1.5, "b is gone") is None  # its session holds its lock
    b.close()  # the process dies: its sessions end
    assert session_ended(lambda: a.release_absent_node("b", 1.5, "b is gone") == 1)
    assert a.get("job").state is ScheduleState.IDLE
    assert [n.id for n in a.nodes()] == []
    (run,) = a.history()
    assert run.status is RunStatus.ABANDONED and run.error == "b is gone"


@pytest.mark.parametrize("stores", SERVERS, indirect=True)
def test_a_fresh_heartbeat_keeps_a_node_whose_session_alone_ended(
    stores: Callable[[], SQLStore], clock: FakeClock
) -> None:
    a, b = stores(), stores()
    held_by_b(b)
    assert held(b, "b") is not None and held(a, "a") is not None
    b.close_presence()  # its presence connection broke; it still beats
    clock.advance(1)
    assert a.release_absent_node("b", 1.5, "b is gone") is None
    assert [n.id for n in a.nodes()] == ["b"]


@pytest.mark.parametrize("stores", SERVERS, indirect=True)
def test_a_node_whose_own_session_ended_judges_nobody(stores: Callable[[], SQLStore], clock: FakeClock) -> None:
    a, b = stores(), stores()
    held_by_b(b)
    assert a.release_absent_node("b", 1.5, "b is gone") is None  # a holds no presence yet
    assert held(b, "b") is not None and held(a, "a") is not None
    b.close()
    clock.advance(2)
    # As after a database restart: a's session ended too, unknown to a. Every lock is free, and
    # nobody's absence means anything.
    end_session_on_the_server(a, "a")
    assert a.release_absent_node("b", 1.5, "b is gone") is None
    assert [n.id for n in a.nodes()] == ["b"]
    # Its next beat's check finds the session gone and takes the lock again on a new one, which
    # starts a new age.
    before = a.hold_presence("a")  # the keeper had not checked yet: the old session's age
    again = held(a, "a")
    assert before is not None and again is not None and again < before
    assert a.release_absent_node("b", 1.5, "b is gone") == 1


@pytest.mark.parametrize("stores", SERVERS, indirect=True)
def test_presence_is_held_once_and_ages(stores: Callable[[], SQLStore]) -> None:
    first, second = stores(), stores()
    assert first.hold_presence("n1") is None  # asked for; its keeper takes it
    taken = held(first, "n1")
    age = held(first, "n1")
    assert taken is not None and age is not None and age > taken
    # The same id from another process (its previous life, not yet closed by the server):
    # not held until that session ends.
    assert held(second, "n1") is None
    first.close()
    assert session_ended(lambda: held(second, "n1") is not None)


def test_sqlite_has_no_presence(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> None:
    store = make_store("sqlite", "optimistic", request, tmp_path, clock=clock)
    assert isinstance(store, SQLStore)
    held_by_b(store)
    clock.advance(10)
    assert store.hold_presence("a") is None
    assert store.release_absent_node("b", 1.5, "b is gone") is None
    store.close()
