"""A node's presence (tickwork.sql.presence): the session-level lock that tells the others at once
that a killed node is gone. On real PostgreSQL and MariaDB servers, with two stores standing for
two nodes; heartbeat ages on a fake clock, sessions ended for real (closed, or killed by the
server as a restart would)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.presence import end_session_on_the_server, held, session_ended
from tests.support.stores import T0, make_store
from tickwork.sql.store import SQLStore
from tickwork.structures import RunStatus, ScheduleSpec, ScheduleState
from tickwork.testing import FakeClock

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
