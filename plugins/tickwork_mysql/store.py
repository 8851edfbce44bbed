"""The MySQL / MariaDB store (``pip install tickwork[mysql]``): MySQL 8 or MariaDB >= 10.6, both
of which have ``FOR UPDATE SKIP LOCKED``, through PyMySQL.

Neither has UPDATE ... RETURNING: the shared store reads that from SQLAlchemy and writes, then
reads what it wrote, in the same transaction (:mod:`tickwork.sql.features`; claims:
:mod:`tickwork.sql.claims.writethenread`). What MySQL spells its own way is in
:mod:`.operations`. Times are BIGINT microseconds since the epoch, like SQLite's: no session time
zone can shift them. Changes made by other processes are found by polling (MySQL has no
LISTEN/NOTIFY).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, event, func, select
from sqlalchemy.dialects.mysql.base import MySQLDialect

from tickwork.errors import ConfigError
from tickwork.sql import dburl
from tickwork.sql.dialects import SQLTraits, declare
from tickwork.sql.engines import pooled_engine
from tickwork.sql.schema import claimable, schedules
from tickwork.sql.starting import LockHolders, locked_rows
from tickwork.sql.watch import UNREAD, poll_loop
from tickwork.structures import NodeRecord

from .connecting import connection_class
from .locks import TAG_NODE, TAG_SESSION, UNTAG_NODE, LockHolderReader
from .operations import MySQLOperations
from .rounds import MySQLRoundTrips
from .settings import MySQLSettings

log = logging.getLogger("tickwork.mysql")

#: Seconds between two warnings that another session holds the rows of ends locked.
ENDS_LOCKED_WARN_EVERY = 10.0
#: The key of a pooled connection's ``info`` naming the node its session lock names.
_NODE_TAG = "tickwork_node"

# No timezone-aware timestamp type: times are integer microseconds since the epoch.
declare(MySQLDialect, SQLTraits(epoch_micros=True))


def sqlalchemy_url(url: str) -> str:
    """Accept ``mysql://`` / ``mariadb://`` URLs and pin the PyMySQL driver (utf8mb4).

    Errors name the part that is wrong, never the URL: after ``${ENV}`` expansion it holds the password.
    """
    parsed = dburl.parse(url, "url", "mysql://user:password@host:port/dbname")
    if parsed.drivername not in ("mysql", "mysql+pymysql", "mariadb", "mariadb+pymysql"):
        raise ConfigError(f"url: expected a mysql:// URL, got {parsed.drivername!r}://...")
    if not parsed.database:
        raise ConfigError("url: name the database, e.g. mysql://user:password@host:3306/tickwork")
    query = {"charset": "utf8mb4", **parsed.query}
    return parsed.set(drivername="mysql+pymysql", query=query).render_as_string(hide_password=False)


class MySQLStore(MySQLRoundTrips):
    """MySQL / MariaDB store; its options: :class:`~tickwork_mysql.settings.MySQLSettings`.

    :param url: ``mysql://user:password@host:port/dbname`` (``${ENV}`` is expanded by the config)
    """

    database_label = "mysql"
    database_title = "MySQL"
    watcher_name = "tickwork-mysql-poll"
    operations_class = MySQLOperations
    section = MySQLSettings
    settings: MySQLSettings
    claim_strategies = MySQLSettings.claim.options
    # InnoDB resolves lock cycles between claims and ends (next-key locks on the unique fire key,
    # row locks taken in different statements) by rolling one back: expected under contention,
    # and rerunning the transaction is the documented remedy. A lock wait timeout is not rerun
    # (MySQLOperations.is_transient).
    transient_attempts = 8
    sqlalchemy_url = staticmethod(sqlalchemy_url)

    def __init__(self, url: str | None = None, *, clock: Callable[[], datetime] | None = None, **options: Any) -> None:
        super().__init__(url, clock=clock, **options)
        self.poll_interval = self.settings.poll_interval
        #: The node this store's sessions are marked as (:mod:`.locks`), once it is known.
        self._node: str | None = None
        self._holders = LockHolderReader()
        self._ends_locked_warned = -1e9

    def _create_engine(self) -> Engine:
        try:
            import pymysql  # noqa: F401
        except ImportError as exc:  # pragma: no cover - depends on the installation
            raise ConfigError("the mysql store needs PyMySQL: pip install 'tickwork[mysql]'") from exc
        # READ COMMITTED: REPEATABLE READ's gap locks on the due index make concurrent claims
        # deadlock on each other's ranges; every statement re-checks what it takes anyway.
        engine = pooled_engine(
            self.url, pool_size=self.pool_size, connect_args={"connect_timeout": 5}, isolation_level="READ COMMITTED"
        )

        # InnoDB counts its lock wait in whole seconds (at least 1).
        lock_wait = max(1, round(self.lock_timeout))
        statement_s = self.statement_timeout

        # One TLS context for every connection: PyMySQL's default (TLS if the server offers it,
        # unverified) otherwise builds one per connection, loading the system's CA certificates
        # each time: 30-70 ms of CPU per connection (.connecting).
        make = connection_class()

        @event.listens_for(engine, "do_connect")
        def _connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
            return make(*cargs, **cparams)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            import pymysql

            with dbapi_conn.cursor() as cur:
                # Marks the session as tickwork's for the messages about locked rows (.locks).
                cur.execute(TAG_SESSION)
                # UNIX_TIMESTAMP(NOW(6)) is exact only without DST gaps in the session's zone.
                cur.execute("SET time_zone = '+00:00'")
                # A row another session holds locked fails a statement after lock_timeout (a
                # store fault, logged and backed off) instead of stalling the node's loop.
                cur.execute("SET SESSION innodb_lock_wait_timeout = %s", (lock_wait,))
                try:  # MariaDB: any statement, in seconds
                    cur.execute("SET SESSION max_statement_time = %s", (statement_s,))
                except pymysql.MySQLError:  # MySQL: SELECTs only, in milliseconds
                    cur.execute("SET SESSION max_execution_time = %s", (round(statement_s * 1000),))

        @event.listens_for(engine, "checkout")
        def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
            node = self._node
            if node is None or record.info.get(_NODE_TAG) == node:
                return  # the hot path: one dict lookup
            import pymysql

            previous = record.info.pop(_NODE_TAG, None)
            # Only a name for the messages: a connection that cannot take it (broken, say) fails
            # in the statement it was checked out for, where the store handles it.
            with contextlib.suppress(pymysql.MySQLError), dbapi_conn.cursor() as cur:
                if previous is not None:
                    cur.execute(UNTAG_NODE, (previous,))
                cur.execute(TAG_NODE, (node,))
                record.info[_NODE_TAG] = node

        return engine

    # -- who holds the rows passed over as locked (.locks) ---------------------------------------------

    def _name_sessions(self, node_id: str) -> None:
        """Mark this store's sessions as ``node_id``'s from their next checkout on."""
        self._node = node_id

    def register_node(self, node_id: str, instance: str, live_within: float) -> NodeRecord | None:
        self._name_sessions(node_id)
        return super().register_node(node_id, instance, live_within)

    def heartbeat(self, node_id: str) -> datetime:
        self._name_sessions(node_id)
        return super().heartbeat(node_id)

    def lock_holders(self, conn: Connection) -> LockHolders | None:
        asked = self._holders.reads
        holders = self._holders.read(conn, self._node)
        self.statements += self._holders.reads - asked
        return holders

    def locked_elsewhere(self, conn: Connection, missing: Sequence[int]) -> set[int]:
        busy = super().locked_elsewhere(conn, missing)
        if busy:
            holders = self.lock_holders(conn)
            level, held = locked_rows(holders)
            now = time.monotonic()
            # A warning only for a session of someone else's: ends are asked again at once and
            # then every 0.5 s, and the engine warns about those that stay passed over.
            if holders is None or not holders.others or now - self._ends_locked_warned < ENDS_LOCKED_WARN_EVERY:
                level = logging.DEBUG
            else:
                self._ends_locked_warned = now
            log.log(level, "cannot write the end of %d run(s) now: %s; they are written again shortly", len(busy), held)
        return busy

    def listen(self, wake: Callable[[], None]) -> None:
        # What a sleeping engine needs to hear about: a new schedule (the highest id moves) or an
        # earlier claimable fire time (added, enabled, fired now, released, given back). Both are
        # index lookups, so polling costs the same whatever the table holds; a change that only
        # makes something due later is not worth a wake.
        marker = select(
            select(func.max(schedules.c.id)).scalar_subquery(),
            select(func.min(schedules.c.next_fire)).where(claimable()).scalar_subquery(),
        )

        def read() -> object:
            with self.engine.connect() as conn:
                return tuple(conn.execute(marker).one())

        try:
            initial = read()  # here, not on the thread: a change once this returns is seen
        except Exception as exc:  # the loop reads it again; a failed read only costs promptness
            log.warning("change poll failed: %s", exc)
            initial = UNREAD
        self._watcher.start(poll_loop(read, self.poll_interval, initial, earlier_or_new), wake)


def earlier_or_new(last: object, current: object) -> bool:
    """Whether the change poll's marker (highest schedule id, earliest claimable fire) moved in a
    way a sleeping engine must hear about: a new schedule, or a claimable fire earlier than the
    earliest before (or one where there was none). Claims move the earliest fire later all the
    time in a cluster at work: waking every node for that cost each a read of its next due time
    every poll (docs/benchmarks.md)."""
    assert isinstance(last, tuple) and isinstance(current, tuple)
    (last_id, last_due), (new_id, new_due) = last, current
    if new_id is not None and (last_id is None or new_id > last_id):
        return True
    return new_due is not None and (last_due is None or new_due < last_due)
