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

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, event, func, select
from sqlalchemy.dialects.mysql.base import MySQLDialect

from tickwork.errors import ConfigError
from tickwork.sql import dburl
from tickwork.sql.dialects import SQLTraits, declare
from tickwork.sql.engines import pooled_engine
from tickwork.sql.schema import claimable, schedules
from tickwork.sql.serverstore import SERVER_OPTIONS, ServerStore
from tickwork.sql.storecore import checked_poll_interval
from tickwork.sql.watch import poll_loop

from .operations import MySQLOperations

log = logging.getLogger("tickwork.mysql")

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


class MySQLStore(ServerStore):
    """MySQL / MariaDB store.

    :param url: ``mysql://user:password@host:port/dbname`` (``${ENV}`` is expanded by the config)
    :param pool_size: connections kept open per node
    :param poll_interval: seconds between checks for changes made by other processes
    """

    database_label = "mysql"
    database_title = "MySQL"
    plugin_name = "mysql"
    url_example = "mysql://user:password@host:3306/dbname"
    watcher_name = "tickwork-mysql-poll"
    operations_class = MySQLOperations
    # advisory: GET_LOCK locks belong to the session, not the transaction: a lock taken in a
    # claim outlives its commit (and a pooled connection) unless released by hand, so the
    # strategy's "locks end with the transaction" does not hold; mark: not worth a third copy.
    claim_strategies = ("skip-locked", "optimistic", "unique-fire")
    options = {**SERVER_OPTIONS, "poll_interval": (int, float)}
    # InnoDB resolves lock cycles between claims and ends (next-key locks on the unique fire key,
    # row locks taken in different statements) by rolling one back: expected under contention,
    # and rerunning the transaction is the documented remedy.
    transient_attempts = 8
    sqlalchemy_url = staticmethod(sqlalchemy_url)

    def __init__(
        self,
        url: str = "",
        *,
        claim: str | None = None,
        batch_size: int = 100,
        pool_size: int = 5,
        poll_interval: float = 0.5,
        lock_timeout: float = 1.0,
        statement_timeout: float = 60.0,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__(
            url,
            claim=claim,
            batch_size=batch_size,
            pool_size=pool_size,
            lock_timeout=lock_timeout,
            statement_timeout=statement_timeout,
            clock=clock,
        )
        self.poll_interval = checked_poll_interval(poll_interval)

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

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            import pymysql

            with dbapi_conn.cursor() as cur:
                # UNIX_TIMESTAMP(NOW(6)) is exact only without DST gaps in the session's zone.
                cur.execute("SET time_zone = '+00:00'")
                # A row another session holds locked fails a statement after lock_timeout (a
                # store fault, logged and backed off) instead of stalling the node's loop.
                cur.execute("SET SESSION innodb_lock_wait_timeout = %s", (lock_wait,))
                try:  # MariaDB: any statement, in seconds
                    cur.execute("SET SESSION max_statement_time = %s", (statement_s,))
                except pymysql.MySQLError:  # MySQL: SELECTs only, in milliseconds
                    cur.execute("SET SESSION max_execution_time = %s", (round(statement_s * 1000),))

        return engine

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

        self._watcher.start(poll_loop(read, self.poll_interval), wake)
