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
  alone broke still beats, and takes its lock again at its next beat);
- no session holds the node's lock;
- the judging node's own lock is still held by its presence session: a database restart ends
  every session, after which every node looks absent until it takes its lock again. The judging
  node also waits until its own session has held its lock for ``node_ttl`` (the membership's
  rule), so every live node has had time to take its lock again.

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
    """The connection that holds this process's presence lock, taken again on a new connection
    when the old one is gone.

    :param connect: opens a connection outside the store's pool (it stays open for the process)
    :param operations: how the database spells the lock
    """

    def __init__(self, connect: Callable[[], Connection], operations: Operations, database: str) -> None:
        self._connect = connect
        self.database = database
        self._operations = operations
        self._conn: Connection | None = None
        self._node: str | None = None
        self._since = 0.0
        self._lock = threading.Lock()

    @property
    def node(self) -> str | None:
        """The node whose lock is held, if any."""
        return self._node

    def hold(self, node_id: str) -> float | None:
        """Seconds the lock of ``node_id`` has been held without a break (0 when just taken);
        ``None`` when it cannot be held now (the database is away, or another session holds
        the name). Never raises: presence only speeds failover up, it is never a reason for a
        heartbeat to fail."""
        take = self._operations.presence_lock(presence_name(self.database, node_id))
        if take is None:
            return None
        with self._lock:
            if self._conn is not None and self._node == node_id:
                try:
                    # A live session still holds its session-level lock: one round trip tells.
                    self._conn.execute(select(literal(1))).scalar()
                    return time.monotonic() - self._since
                except SQLAlchemyError as exc:
                    log.info("presence connection of %s lost (%s); taking the lock again", node_id, exc)
                    self._drop()
            self._drop()
            try:
                conn = self._connect()
            except SQLAlchemyError as exc:
                log.info("cannot open the presence connection of %s: %s", node_id, exc)
                return None
            try:
                taken = bool(conn.execute(take).scalar())
            except SQLAlchemyError as exc:
                log.info("cannot take the presence lock of %s: %s", node_id, exc)
                conn.close()
                return None
            if not taken:
                # Another session holds it: the previous process of this id, whose session the
                # database has not closed yet. Taken at a later beat.
                conn.close()
                return None
            self._conn, self._node, self._since = conn, node_id, time.monotonic()
            return 0.0

    def _drop(self) -> None:
        if self._conn is not None:
            # A broken connection: closing it is all that was left to do.
            with contextlib.suppress(SQLAlchemyError):
                self._conn.close()
        self._conn, self._node = None, None

    def close(self) -> None:
        """End the session (the lock goes with it)."""
        with self._lock:
            self._drop()


class Presence(NodeState):
    """Holding this node's presence and releasing a node whose presence is gone."""

    _presence: PresenceSession | None = None

    def presence_engine(self) -> Engine | None:
        """An engine outside the pool for the presence connection; ``None`` where the database
        has no session-level locks worth holding (SQLite: one machine, nodes judged by heartbeat)."""
        return None

    def hold_presence(self, node_id: str) -> float | None:
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
        return self._presence.hold(node_id)

    def close_presence(self) -> None:
        if self._presence is not None:
            self._presence.close()

    @transient_retry
    def release_absent_node(self, node_id: str, stale_after: float, reason: str) -> int | None:
        session = self._presence
        own = session.node if session is not None else None
        if session is None or own is None or own == node_id:
            return None
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
            return self._remove_and_release(conn, node_id, reason, now)
