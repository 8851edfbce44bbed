"""Who holds the row locks a MySQL / MariaDB node's locking reads passed over.

``SKIP LOCKED`` passes over a row whoever holds it: a console's ``SELECT ... FOR UPDATE``, but
also the other nodes' claims, starts and ends, a few milliseconds each, and rows their scans only
read (InnoDB locks a row before it evaluates the rest of the ``WHERE``). To tell the two apart,
every connection of a tickwork store holds a named lock for as long as it lives:
``tickwork-session:<connection id>``, and once the store knows its node,
``tickwork-session:<connection id>:<hash of database and node id>``. A lock holder read from
``information_schema.INNODB_TRX`` is then tickwork's if its connection holds the first name
(``IS_USED_LOCK``), and node ``n2``'s if it holds the second for ``n2``, a node of
``tickwork_nodes``. Named locks belong to the session: they cost nothing while held and go with the
connection. Reading ``INNODB_TRX`` needs the ``PROCESS`` privilege; without it the holders are not
named (and the messages say that the database cannot tell whose lock it was).

InnoDB does not say which transaction holds a given row unless someone waits for it, which SKIP
LOCKED never does: the holders named are the transactions holding row locks in this database at
that moment, the likely ones, as InnoDB last sampled them: ``INNODB_TRX`` is sampled again only when
it has not been read for 0.1 s (so readers that never pause for that long would read one sample
forever, and a store reads it at most every :data:`HOLDERS_EVERY` seconds, giving its last answer
meanwhile). A lock held long enough to matter is in the sample; a transaction of a few milliseconds
may have ended, or not yet begun, when it was taken.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from tickwork.sql.schema import nodes
from tickwork.sql.starting import LockHolders

log = logging.getLogger("tickwork.mysql")

#: The prefix of the named lock every connection of a tickwork store holds.
SESSION_LOCK = "tickwork-session:"
#: Taken on each new connection: marks the session as tickwork's.
TAG_SESSION = f"SELECT GET_LOCK(CONCAT('{SESSION_LOCK}', CONNECTION_ID()), 0)"
#: Taken once the store knows its node (``%s``: the node id), released when it changes: names the
#: node. 17 + 20 + 1 + 24 characters at most, under MySQL's 64.
_NODE_LOCK = f"CONCAT('{SESSION_LOCK}', CONNECTION_ID(), ':', LEFT(SHA1(CONCAT(DATABASE(), ':', %s)), 24))"
TAG_NODE = f"SELECT GET_LOCK({_NODE_LOCK}, 0)"
UNTAG_NODE = f"SELECT RELEASE_LOCK({_NODE_LOCK})"

#: The transactions holding row locks now (other than the reader's), in this database or in none,
#: oldest first; for each, whether it is tickwork's and of which node. PROCESSLIST is joined, not
#: left-joined: INNODB_TRX is a sample up to 0.1 s old, PROCESSLIST is now, and a transaction whose
#: session has ended since holds nothing (left-joined, its NULL ``p.DB`` named it as another
#: database session, even one of another database's).
HOLDERS = text(
    f"""
    SELECT t.trx_mysql_thread_id AS thread,
           TIMESTAMPDIFF(SECOND, t.trx_started, NOW()) AS age,
           t.trx_rows_locked AS locked,
           p.USER AS user, p.HOST AS host, p.COMMAND AS command,
           LEFT(COALESCE(t.trx_query, p.INFO), 120) AS statement,
           IS_USED_LOCK(CONCAT('{SESSION_LOCK}', t.trx_mysql_thread_id)) = t.trx_mysql_thread_id AS tickwork,
           (SELECT n.id FROM {nodes.name} n
             WHERE IS_USED_LOCK(CONCAT('{SESSION_LOCK}', t.trx_mysql_thread_id, ':',
                                       LEFT(SHA1(CONCAT(DATABASE(), ':', n.id)), 24))) = t.trx_mysql_thread_id
             LIMIT 1) AS node
    FROM information_schema.INNODB_TRX t
    JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
    WHERE t.trx_mysql_thread_id <> CONNECTION_ID() AND t.trx_rows_locked > 0
      AND (p.DB = DATABASE() OR p.DB IS NULL)
    ORDER BY t.trx_started, t.trx_mysql_thread_id
    LIMIT 10
    """
)

#: MySQL errors of a user without the PROCESS privilege reading INNODB_TRX.
_NOT_ALLOWED = {1227, 1142, 1044}
#: Seconds between two reads of INNODB_TRX by one store (see the module's docstring).
HOLDERS_EVERY = 0.5


def describe(rows: Sequence[Any], own_node: str | None) -> LockHolders:
    """The holders of :data:`HOLDERS`'s ``rows`` in words (``own_node``: the reading store's node)."""
    others: list[str] = []
    tickwork: dict[str, None] = {}  # ordered, without repeats
    for r in rows:
        if r.node is not None:
            node = str(r.node)
            who = (
                f"this node's ({node}) other transaction" if node == own_node else f"tickwork node {node}'s transaction"
            )
            tickwork[who] = None
        elif r.tickwork:
            tickwork[
                f"a tickwork session of no live node (thread {r.thread}: an admin command, or a node declared dead)"
            ] = None
        else:
            doing = "idle in its transaction" if r.command == "Sleep" or not r.statement else f"running: {r.statement}"
            others.append(
                f"thread {r.thread} ({r.user}@{r.host}, transaction open {r.age}s, {r.locked} row(s) locked, {doing})"
            )
    return LockHolders(others=tuple(others), tickwork=tuple(tickwork))


class LockHolderReader:
    """Reads :data:`HOLDERS` on a store's connection (about 0.4 ms, only after rows were passed
    over) at most every :data:`HOLDERS_EVERY` seconds, and stops asking for good once the
    database refuses (no ``PROCESS`` privilege)."""

    def __init__(self) -> None:
        self.allowed = True
        #: How many times INNODB_TRX was read (the store counts its statements).
        self.reads = 0
        self._lock = threading.Lock()
        self._last: tuple[float, LockHolders] | None = None

    def read(self, conn: Connection, own_node: str | None) -> LockHolders | None:
        if not self.allowed:
            return None
        now = time.monotonic()
        with self._lock:
            if self._last is not None and now - self._last[0] < HOLDERS_EVERY:
                return self._last[1]
        self.reads += 1
        try:
            # In the caller's transaction: an error of this read does not end it on MySQL.
            holders = describe(conn.execute(HOLDERS).all(), own_node)
        except DBAPIError as exc:
            args: tuple[Any, ...] = getattr(exc.orig, "args", ())
            if args and args[0] in _NOT_ALLOWED:
                self.allowed = False
                log.info(
                    "cannot name the sessions holding rows locked: reading information_schema.INNODB_TRX needs the "
                    "PROCESS privilege (GRANT PROCESS ON *.* TO the store's user); messages about locked rows will "
                    "not say whose lock it was"
                )
            else:
                log.debug("cannot read who holds row locks: %s", exc)
            return None
        with self._lock:
            self._last = (now, holders)
        return holders
