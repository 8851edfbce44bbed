"""Presence re-taken off the heartbeat's path (issue #40, docs/cluster.md#when-a-node-dies): a live
node whose presence session ends while new connections to the database stall keeps beating, and
the others never release it by presence, while a node whose session really ended is released.

On real PostgreSQL and MariaDB servers, with three stores standing for three nodes: ``a`` (live;
its presence connection goes through a TCP proxy on localhost that, when stalled, accepts new
connections and holds them unanswered), ``b`` (the judge) and ``c`` (dies: its store is closed).
``node_ttl`` is 60 s, so that only presence can release a node within the test."""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from tests.support.presence import end_session_on_the_server, held, presence_key_unsigned
from tickwork.sql.presence import presence_name
from tickwork.sql.serverstore import ServerStore, presence_engine_for
from tickwork.testing import FakeClock
from tickwork_membership.single import SingleMembership
from tickwork_mysql.store import MySQLStore
from tickwork_postgres.operations import PRESENCE_NAMESPACE
from tickwork_postgres.store import PostgresStore

#: The default interval, as in the issue: a live node's heartbeat is then about one interval old
#: at most, half an interval short of what presence calls dead (1.5), room for a loaded machine.
INTERVAL = 1.0
NODE_TTL = 60.0
#: How long new connections stall: longer than the presence connection's connect timeout (5 s).
STALL = 8.0


class StallingProxy:
    """A TCP proxy on localhost in front of a database server. While stalled it accepts new
    connections and holds them unanswered (a proxy or a server whose accept queue is stuck),
    forwarding each once the stall ends; connections made before keep flowing."""

    def __init__(self, host: str, port: int) -> None:
        self._upstream = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        #: Connections accepted while stalled.
        self.held = 0
        #: Connections forwarded to the server, and those of them still open.
        self.forwarded = 0
        self.open = 0
        threading.Thread(target=self._accept, name="stalling-proxy", daemon=True).start()

    def stall(self) -> None:
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets, self._sockets = [self._listener, *self._sockets], []
        self._flowing.set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _track(self, sock: socket.socket) -> bool:
        with self._lock:
            if self._closed:
                sock.close()
                return False
            self._sockets.append(sock)
            return True

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            if not self._track(client):
                return
            if not self._flowing.is_set():
                with self._lock:
                    self.held += 1
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        self._flowing.wait()
        try:
            upstream = socket.create_connection(self._upstream, timeout=5)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        if not self._track(upstream):
            client.close()
            return
        with self._lock:
            self.forwarded += 1
            self.open += 1
        ends = {client: upstream, upstream: client}
        try:
            while True:
                readable, _, _ = select.select(list(ends), [], [], 0.5)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    ends[sock].sendall(data)
        except (OSError, ValueError):  # closed by close(), or by a peer
            return
        finally:
            for sock in ends:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            with self._lock:
                self.open -= 1


def proxied(store_class: type[ServerStore], port: int, beats: list[datetime] | None = None) -> type[ServerStore]:
    """``store_class`` whose presence connection goes through the proxy on ``port``; its pool,
    and so its heartbeats, go to the server directly. Its heartbeats are appended to ``beats``."""

    class Proxied(store_class):  # type: ignore[valid-type,misc]
        def presence_engine(self) -> Engine | None:
            return presence_engine_for(make_url(self.url).set(host="127.0.0.1", port=port))

        def refresh_heartbeat(self, node_id: str) -> datetime | None:
            beat: datetime | None = super().refresh_heartbeat(node_id)
            if beat is not None and beats is not None:
                beats.append(beat)
            return beat

    return Proxied


def eventually(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def presence_held(store: ServerStore, node_id: str) -> bool:
    """Whether some session holds ``node_id``'s presence lock, as the server sees it."""
    name = presence_name(store.engine.url.database or "", node_id)
    with store.engine.begin() as conn:
        if store.engine.dialect.name == "postgresql":
            query = (
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND classid = :ns AND objid = :key"
            )
            keys = {"ns": PRESENCE_NAMESPACE, "key": presence_key_unsigned(name)}
            return bool(conn.execute(text(query), keys).scalar())
        return conn.execute(text("SELECT IS_USED_LOCK(:n)"), {"n": name}).scalar() is not None


@pytest.fixture
def proxy(server: tuple[type[ServerStore], str]) -> Iterator[StallingProxy]:
    """A stalling proxy in front of the server under test."""
    store_class, url = server
    parsed = make_url(url)
    default_port = 5432 if store_class is PostgresStore else 3306
    stalling = StallingProxy(parsed.host or "127.0.0.1", parsed.port or default_port)
    yield stalling
    stalling.close()


@pytest.fixture(params=["postgres", "mysql"])
def server(request: pytest.FixtureRequest) -> tuple[type[ServerStore], str]:
    """The store class and the URL of a fresh database on its server."""
    store_class: type[ServerStore] = PostgresStore if request.param == "postgres" else MySQLStore
    return store_class, request.getfixturevalue(f"{request.param}_url")


@pytest.fixture
def opened() -> Iterator[Callable[[ServerStore], ServerStore]]:
    stores: list[ServerStore] = []

    def open_(store: ServerStore) -> ServerStore:
        store.upgrade()
        store.open()
        stores.append(store)
        return store

    yield open_
    for store in stores:
        store.close()


def test_a_live_node_whose_presence_stalls_keeps_beating_and_is_not_released(
    server: tuple[type[ServerStore], str],
    proxy: StallingProxy,
    opened: Callable[[ServerStore], ServerStore],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    store_class, url = server
    a_beats: list[datetime] = []
    a = opened(proxied(store_class, proxy.port, a_beats)(url))
    b, c = opened(store_class(url)), opened(store_class(url))
    live_a = SingleMembership(heartbeat_interval=INTERVAL, node_ttl=NODE_TTL)
    judge = SingleMembership(heartbeat_interval=INTERVAL, node_ttl=NODE_TTL)
    try:
        # c: a node that beat once and holds its presence; its session ends below, as a killed
        # process's would.
        c.heartbeat("c")
        assert eventually(lambda: c.hold_presence("c") is not None)
        live_a.start(a, "a")
        judge.start(b, "b")
        assert eventually(lambda: presence_held(b, "a") and presence_held(b, "b"))
        # The judge reads presence once its own has been held, and it has beaten, for 3 intervals.
        time.sleep(INTERVAL * 4)

        proxy.stall()
        end_session_on_the_server(b, "a")  # a's presence session ends; new connections stall
        c.close()  # c dies
        stalled_at = time.monotonic()
        beats_before = len(a_beats)
        missing: list[float] = []
        while time.monotonic() - stalled_at < STALL:
            if "a" not in {node.id for node in b.nodes()}:
                missing.append(time.monotonic() - stalled_at)
            time.sleep(0.1)
        beats = a_beats[beats_before:]
        proxy.resume()
        # a takes its lock again once connections flow.
        assert eventually(lambda: presence_held(b, "a"))
    finally:
        live_a.stop()
        judge.stop()

    # The stall was met: a's new presence connection was held by the proxy.
    assert proxy.held >= 1
    # The judge did judge by presence during the stall: c, whose session ended, was released.
    assert "node c is dead (its database session ended" in caplog.text
    # a was never released, and beat on through the stall.
    assert "node a is dead" not in caplog.text, caplog.text
    assert not missing, f"a was missing from the nodes {missing[0]:.1f}s into the stall"
    assert live_a.rejoins() == 0
    assert len(beats) >= STALL / INTERVAL / 2, beats  # about one an interval, with room for a loaded machine
    assert beats == sorted(beats) and beats[-1] > beats[0]


def test_a_judgement_relies_on_the_session_the_heartbeat_was_told_of(
    server: tuple[type[ServerStore], str], opened: Callable[[ServerStore], ServerStore], clock: FakeClock
) -> None:
    store_class, url = server
    a, b = opened(store_class(url, clock=clock)), opened(store_class(url, clock=clock))
    b.heartbeat("b")
    assert held(b, "b") is not None and held(a, "a") is not None
    b.close()  # b dies
    clock.advance(2)
    assert eventually(lambda: not presence_held(a, "b"))
    # a's session ends too, as in a database restart; the others have not taken theirs again.
    end_session_on_the_server(a, "a")
    # a's beat: its keeper has not checked since, so it is told of the old session's age (old
    # enough to judge by), and the keeper finds it lost and takes the lock again on a new session.
    assert a.hold_presence("a") is not None
    assert eventually(lambda: presence_held(a, "a"))
    # a's own lock is held, but not by the session the beat was told of: no judgement.
    assert a.release_absent_node("b", 1.5, "b is gone") is None
    assert [n.id for n in a.nodes()] == ["b"]
    # The next beat is told of the new session (and the membership lets it settle first).
    assert held(a, "a") is not None
    assert a.release_absent_node("b", 1.5, "b is gone") == 0
    assert [n.id for n in a.nodes()] == []


def test_a_lock_taken_after_the_store_closed_is_let_go(
    server: tuple[type[ServerStore], str], proxy: StallingProxy, opened: Callable[[ServerStore], ServerStore]
) -> None:
    store_class, url = server
    a, other = opened(proxied(store_class, proxy.port)(url)), opened(store_class(url))
    proxy.stall()
    assert a.hold_presence("a") is None  # at once: the keeper's connection is held by the proxy
    assert eventually(lambda: proxy.held == 1)
    a.close_presence()  # the node stops while its keeper is still connecting
    proxy.resume()
    # The keeper's connection goes through, and the keeper, finding the session closed, ends it.
    assert eventually(lambda: proxy.forwarded == 1 and proxy.open == 0)
    assert not presence_held(other, "a")
