"""A node's presence in the database, so the others can tell a node that died from one that is
only slow (docs/cluster.md#when-a-node-dies).

A heartbeat alone cannot tell them apart: a node that stopped beating may be frozen, cut off or
overloaded, and might still start runs, so it is declared dead only after ``node_ttl``. But a
process that is killed, or whose host is gone with a connection reset, loses its database
sessions at once, and with them any session-level lock they held. Each node holds such a lock,
named for the node, on a connection of its own for as long as it lives (PostgreSQL: an advisory
lock; MySQL/MariaDB: ``GET_LOCK``). A node whose heartbeat is a little stale *and* whose lock no
session holds is dead for certain, and is released without waiting for ``node_ttl``.

What keeps that judgement safe, each checked by the database in the releasing transaction:

- the node's heartbeat is older than ``stale_after`` (a live node whose presence connection
  alone broke still beats, and takes its lock again soon after);
- no session holds the node's lock;
- the judging node's own lock is still held by its presence session, the very one whose age the
  heartbeat judged by: a database restart ends every session, after which every node looks
  absent until it takes its lock again. The judging node also waits until its own session has
  held its lock for a few heartbeat intervals (the membership's rule), so every live node has had
  time to take its lock again.

The lock is checked, and taken again, by a thread of the session's own, never by the heartbeat
that asks about it: opening a connection may stall for seconds (a proxy holding new connections,
a server slow to accept), and a heartbeat that waited for it would go stale exactly while this
node's lock is free, which is the others' sign that it is dead. Meanwhile the node beats on, so
it is not released, and it judges nobody by presence until its lock is held again.

A frozen node keeps its sessions (and its lock): it is judged by ``node_ttl`` as before, and the
fenced starts keep it from starting what was taken over.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy import Connection, Engine, literal, select
from sqlalchemy.exc import SQLAlchemyError

from .features import Operations
from .nodestate import NodeState
from .retry import transient_retry

log = logging.getLogger("tickwork.presence")


def presence_name(database: str, node_id: str) -> str:
    """The lock's name for ``node_id`` of the cluster in ``database``: a MySQL named lock is the
    whole server's, and two clusters in two databases of one server may use the same node ids.
    Fixed-length whatever the id (MySQL caps names at 64)."""
    key = f"{database}\0{node_id}".encode()
    return "tickwork-node:" + hashlib.blake2b(key, digest_size=20).hexdigest()


class PresenceSession:
    """The connection that holds this process's presence lock, kept by a thread of its own
    (``tickwork-presence``) that checks it when asked and takes the lock again on a new
    connection when the old one is gone.

    Nothing the connection does reaches the caller of :meth:`hold`: a new connection may take
    seconds to open (a stalled proxy, a server slow to accept), and the heartbeat that asks must
    not wait for it, or this node's heartbeat goes stale while its session is gone and the others
    declare it dead (issue #40).

    :param connect: opens a connection outside the store's pool (it stays open for the process)
    :param operations: how the database spells the lock
    """

    def __init__(self, connect: Callable[[], Connection], operations: Operations, database: str) -> None:
        self._connect = connect
        self.database = database
        self._operations = operations
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        # What the keeper publishes: the node whose lock its connection holds, since when, and a
        # generation that moves on whenever a held lock is given up or found lost.
        self._node: str | None = None
        self._since = 0.0
        self._generation = 0
        # The generation whose age hold() last reported (None: it reported nothing held).
        self._reported: int | None = None
        # What the keeper is asked for: the node to hold (None: end the session), and rounds.
        self._want: str | None = None
        self._asked = 0
        self._answered = 0
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def hold(self, node_id: str, *, wait: float = 0.0) -> float | None:
        """Seconds the lock of ``node_id`` has been held without a break, as of the keeper's
        last check (0 when just taken); ``None`` when it is not held now: not taken yet, being
        taken again, the database is away, or another session holds the name. Asks the keeper
        to check (or take) it again, and returns at once, or after at most ``wait`` seconds for
        that round to end (tests; the heartbeat never waits). Never raises: presence only speeds
        failover up, it is never a reason for a heartbeat to fail or be late."""
        if self._operations.presence_lock(presence_name(self.database, node_id)) is None:
            return None
        with self._lock:
            self._want = node_id
            self._asked += 1
            asked = self._asked
            if self._thread is None:
                self._thread = threading.Thread(target=self._keep, name="tickwork-presence", daemon=True)
                self._thread.start()
            self._wake.set()
            if wait > 0:
                self._done.wait_for(lambda: self._answered >= asked, timeout=wait)
            if self._node != node_id:
                self._reported = None
                return None
            # Judging by presence is allowed only while this very session holds the lock.
            self._reported = self._generation
            return time.monotonic() - self._since

    def vouched(self) -> tuple[str, int] | None:
        """The node whose lock :meth:`hold` last reported held, and that session's generation,
        if it is still the one holding it."""
        with self._lock:
            if self._node is None or self._reported != self._generation:
                return None
            return self._node, self._generation

    def unchanged(self, generation: int) -> bool:
        """Whether the session of ``generation`` still holds the lock: the keeper has not found
        it lost, nor started to take the lock again (it moves the generation on first)."""
        with self._lock:
            return self._node is not None and self._generation == generation

    def _keep(self) -> None:
        """The keeper: a round whenever :meth:`hold` asks, until :meth:`close`."""
        try:
            self._rounds()
        except Exception:
            # A fault of the driver's or ours: presence is lost (never a reason for the node to
            # fail), and the next hold() starts a new keeper.
            log.exception("the presence keeper failed")
            with self._lock:
                self._thread = None
                self._unpublish()

    def _rounds(self) -> None:
        conn: Connection | None = None  # this thread's alone
        held: str | None = None
        try:
            while True:
                self._wake.wait()
                with self._lock:
                    self._wake.clear()
                    want, asked = self._want, self._asked
                    if want is None:  # closed
                        self._thread = None
                        self._unpublish()
                        self._answered = asked
                        self._done.notify_all()
                        return
                if conn is not None and held == want:
                    try:
                        # A live session still holds its session-level lock: one round trip tells.
                        conn.execute(select(literal(1))).scalar()
                    except SQLAlchemyError as exc:
                        log.info("presence connection of %s lost (%s); taking the lock again", want, exc)
                    else:
                        self._answer(asked)
                        continue
                # Unpublished before any new connection opens: a judgement that began while the
                # old session held the lock must not be confirmed by the new one
                # (Presence.release_absent_node).
                with self._lock:
                    self._unpublish()
                _closed(conn)
                conn, held = self._take(want), None
                with self._lock:
                    if conn is not None and self._want == want:
                        held, self._node, self._since = want, want, time.monotonic()
                if held is None and conn is not None:  # taken, but closed meanwhile
                    _closed(conn)
                    conn = None
                self._answer(asked)
        finally:
            _closed(conn)

    def _take(self, node_id: str) -> Connection | None:
        """A new connection holding the lock of ``node_id``, or ``None``."""
        take = self._operations.presence_lock(presence_name(self.database, node_id))
        assert take is not None
        try:
            conn = self._connect()
        except SQLAlchemyError as exc:
            log.info("cannot open the presence connection of %s: %s", node_id, exc)
            return None
        try:
            taken = bool(conn.execute(take).scalar())
        except SQLAlchemyError as exc:
            log.info("cannot take the presence lock of %s: %s", node_id, exc)
            _closed(conn)
            return None
        if not taken:
            # Another session holds it: the previous process of this id, whose session the
            # database has not closed yet. Taken at a later round.
            _closed(conn)
            return None
        return conn

    def _unpublish(self) -> None:
        if self._node is not None:
            self._node = None
            self._generation += 1

    def _answer(self, asked: int) -> None:
        with self._lock:
            self._answered = max(self._answered, asked)
            self._done.notify_all()

    def close(self, *, wait: float = 1.0) -> None:
        """End the session (the lock goes with it). The keeper closes its connection; this waits
        up to ``wait`` seconds for it (a keeper still opening a connection closes it when done)."""
        with self._lock:
            self._want = None
            self._unpublish()
            thread = self._thread
            self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=wait)


def _closed(conn: Connection | None) -> None:
    """Close ``conn``, if any."""
    if conn is not None:
        # Possibly a broken connection: closing it is all that was left to do.
        with contextlib.suppress(SQLAlchemyError):
            conn.close()


class Presence(NodeState):
    """Holding this node's presence and releasing a node whose presence is gone."""

    _presence: PresenceSession | None = None

    def presence_engine(self) -> Engine | None:
        """An engine outside the pool for the presence connection; ``None`` where the database
        has no session-level locks worth holding (SQLite: one machine, nodes judged by heartbeat)."""
        return None

    def hold_presence(self, node_id: str, *, wait: float = 0.0) -> float | None:
        """As the store's contract says, without ever waiting on the database: the lock is
        checked and taken again by the presence session's own thread (:class:`PresenceSession`);
        ``wait`` (tests) waits at most that long for its check."""
        if self._presence is None:
            engine = self.presence_engine()
            if engine is None:
                return None
            database = engine.url.database or ""
            if self.operations.presence_lock(presence_name(database, node_id)) is None:
                return None
            self._presence = PresenceSession(
                lambda: engine.connect().execution_options(isolation_level="AUTOCOMMIT"), self.operations, database
            )
        return self._presence.hold(node_id, wait=wait)

    def close_presence(self) -> None:
        if self._presence is not None:
            self._presence.close()

    @transient_retry
    def release_absent_node(self, node_id: str, stale_after: float, reason: str) -> int | None:
        session = self._presence
        vouched = session.vouched() if session is not None else None
        if session is None or vouched is None or vouched[0] == node_id:
            return None
        own, generation = vouched
        gone, self_gone = (
            self.operations.presence_free(presence_name(session.database, node_id)),
            self.operations.presence_free(presence_name(session.database, own)),
        )
        if gone is None or self_gone is None:
            return None
        now = self.now_expr()
        with self._tx() as conn:
            if not self._lock_if_stale(conn, node_id, stale_after, now):
                return None
            absent, self_absent = conn.execute(select(gone, self_gone)).one()
            # Our own lock free means our presence session is gone (a database restart ends
            # every session): nobody's absence means anything until each has taken it again.
            if not absent or self_absent:
                return None
            # Our own lock held, but by the session whose age the heartbeat judged by? The keeper
            # may have found it lost and taken the lock again meanwhile, on a session too young
            # to tell (after a restart, the others may not have taken theirs again yet).
            if not session.unchanged(generation):
                return None
            return self._remove_and_release(conn, node_id, reason, now)
