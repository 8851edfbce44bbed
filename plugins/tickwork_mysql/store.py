"""The MySQL / MariaDB store (``pip install tickwork[mysql]``): MySQL 8 or MariaDB >= 10.6, both
of which have ``FOR UPDATE SKIP LOCKED``, through PyMySQL.

Neither has UPDATE ... RETURNING, so writes that the shared store does in one statement are a
write and a read here, in the same transaction (see claiming.py for claims). Times are BIGINT
microseconds since the epoch, like SQLite's: no session time zone can shift them. Changes made by
other processes are found by polling (MySQL has no LISTEN/NOTIFY).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    RowMapping,
    bindparam,
    column,
    delete,
    event,
    func,
    literal_column,
    select,
    table,
    tuple_,
    type_coerce,
    update,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects.mysql.base import MySQLDialect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, IntegrityError

from tickwork.errors import ConfigError, ScheduleExistsError, ScheduleNotFoundError
from tickwork.sql import dburl
from tickwork.sql.claiming import ClaimScope
from tickwork.sql.dialects import SQLTraits, declare
from tickwork.sql.engines import pooled_engine
from tickwork.sql.migrations import VERSION_TABLE
from tickwork.sql.schema import UTCDateTime, claimable, nodes, runs, schedules
from tickwork.sql.store import UNHELD, SQLStore, retriggered, schedule_from_row, spec_values, transient_retry
from tickwork.sql.watch import ChangeWatcher, poll_loop
from tickwork.structures import Claim, Finish, RunStatus, Schedule, ScheduleSpec

from . import claiming

log = logging.getLogger("tickwork.mysql")

# No timezone-aware timestamp type: times are integer microseconds since the epoch.
declare(MySQLDialect, SQLTraits(epoch_micros=True))

# NOW(6) is fixed for the duration of one statement, like PostgreSQL's statement_timestamp().
_NOW_MICROS = "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)"
#: MySQL error numbers after which the transaction was rolled back and may be rerun.
_TRANSIENT_ERRORS = {1213, 1205}  # deadlock found, lock wait timeout
#: The schema's version row, locked to serialize deployment syncs (lock_schedule_writes).
_SCHEMA_VERSION = table(VERSION_TABLE, column("version_num"))


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


class MySQLStore(SQLStore):
    """MySQL / MariaDB store.

    :param url: ``mysql://user:password@host:port/dbname`` (``${ENV}`` is expanded by the config)
    :param pool_size: connections kept open per node
    :param poll_interval: seconds between checks for changes made by other processes
    """

    database_label = "mysql"
    # advisory: GET_LOCK locks belong to the session, not the transaction: a lock taken in a
    # claim outlives its commit (and a pooled connection) unless released by hand, so the
    # strategy's "locks end with the transaction" does not hold; mark: not worth a third copy.
    claim_strategies = ("skip-locked", "optimistic", "unique-fire")
    options = {"url": str, "claim": str, "batch_size": int, "pool_size": int, "poll_interval": (int, float)}
    create_empty = False
    # InnoDB resolves lock cycles between claims and ends (next-key locks on the unique fire key,
    # row locks taken in different statements) by rolling one back: expected under contention,
    # and rerunning the transaction is the documented remedy.
    transient_attempts = 8

    def __init__(
        self,
        url: str = "",
        *,
        claim: str | None = None,
        batch_size: int = 100,
        pool_size: int = 5,
        poll_interval: float = 0.5,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__(claim=claim, batch_size=batch_size, clock=clock)
        if not url:
            raise ConfigError('url: the mysql store needs url = "mysql://user:password@host:3306/dbname"')
        self.url = sqlalchemy_url(url)
        if pool_size < 1:
            raise ConfigError(f"pool_size: must be >= 1, got {pool_size}")
        if poll_interval <= 0:
            raise ConfigError(f"poll_interval: must be > 0, got {poll_interval}")
        self.pool_size = pool_size
        self.poll_interval = float(poll_interval)
        self._watcher = ChangeWatcher("tickwork-mysql-poll")

    def describe(self) -> str:
        return f"MySQL database {make_url(self.url).render_as_string(hide_password=True)}"

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

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            with dbapi_conn.cursor() as cur:
                # UNIX_TIMESTAMP(NOW(6)) is exact only without DST gaps in the session's zone.
                cur.execute("SET time_zone = '+00:00'")

        return engine

    # -- dialect hooks ----------------------------------------------------------------------------

    def _db_now(self) -> ColumnElement[Any]:
        return type_coerce(literal_column(_NOW_MICROS), UTCDateTime)

    def _plus_seconds(self, value: ColumnElement[Any], seconds: ColumnElement[Any]) -> ColumnElement[Any]:
        return value.op("+", return_type=UTCDateTime)(seconds * 1_000_000)

    def insert_ignore(self, table: Any) -> Any:
        # ON DUPLICATE KEY UPDATE of the key itself: skips duplicates only, where INSERT IGNORE
        # would also turn other errors (truncation, bad values) into warnings.
        stmt = mysql.insert(table)
        key = next(iter(table.primary_key.columns))
        return stmt.on_duplicate_key_update({key.name: key})

    def is_transient(self, error: DBAPIError) -> bool:
        args: tuple[Any, ...] = getattr(error.orig, "args", ())
        return bool(args) and args[0] in _TRANSIENT_ERRORS

    def refresh_statistics(self) -> None:
        with self._tx() as conn:
            conn.exec_driver_sql("ANALYZE TABLE tickwork_schedules").all()

    def _release_and_end(self, conn: Connection, finishes: Sequence[Finish]) -> set[int]:
        return self._release_and_end_by_fences(conn, finishes, lock=True)

    def lock_schedule_writes(self, conn: Connection) -> None:
        # A second node starting at the same moment waits here, then plans from what the first
        # one wrote (READ COMMITTED: the next read sees it). Not GET_LOCK: a named lock belongs
        # to the session and would outlive the transaction on a pooled connection. A locking
        # read of the schema's version row (one row in every migrated database) ends with the
        # transaction; a wait past innodb_lock_wait_timeout (error 1205) is retried.
        conn.execute(select(_SCHEMA_VERSION.c.version_num).with_for_update()).all()

    def _notify(self, conn: Connection) -> None:
        """Nothing to send: listeners poll."""

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

    def close(self) -> None:
        self._watcher.stop()
        super().close()

    # -- writes without RETURNING -----------------------------------------------------------------

    def _row(self, conn: Connection, name: str) -> Schedule:
        row = conn.execute(select(schedules).where(schedules.c.name == name)).first()
        if row is None:
            raise ScheduleNotFoundError(name)
        return schedule_from_row(row)

    def add(self, spec: ScheduleSpec, next_fire: datetime | None) -> Schedule:
        now = self.now_expr()
        values = spec_values(spec) | {"next_fire": next_fire, "created_at": now, "updated_at": now}
        try:
            with self._tx() as conn:
                conn.execute(schedules.insert().values(**values))
                return self._row(conn, spec.name)
        except IntegrityError as exc:
            raise ScheduleExistsError(spec.name) from exc

    def _update_named(self, name: str, values: dict[str, Any]) -> Schedule:
        with self._tx() as conn:
            if not conn.execute(update(schedules).where(schedules.c.name == name).values(**values)).rowcount:
                raise ScheduleNotFoundError(name)
            return self._row(conn, name)

    def update(self, spec: ScheduleSpec, next_fire: datetime | None) -> Schedule:
        # MySQL evaluates SET left to right on the new values, so the trigger comparison that marks
        # a running schedule retimed (docs/architecture.md#faults) is its own statement, first.
        with self._tx() as conn:
            conn.execute(
                update(schedules)
                .where(schedules.c.name == spec.name, schedules.c.state == "running", retriggered(spec))
                .values(retimed=True)
            )
        values = spec_values(spec) | {"next_fire": next_fire, "updated_at": self.now_expr(), "fault": None}
        return self._update_named(spec.name, values)

    def set_enabled(self, name: str, enabled: bool, next_fire: datetime | None) -> Schedule:
        values = {"enabled": enabled, "next_fire": next_fire, "updated_at": self.now_expr(), "fault": None}
        return self._update_named(name, values)

    def fire_now(self, name: str) -> Schedule:
        now = self.now_expr()
        with self._tx() as conn:
            idle = update(schedules).where(schedules.c.name == name, schedules.c.state == "idle")
            if not conn.execute(idle.values(next_fire=now, updated_at=now)).rowcount:
                # Running: leave a request that the release honours (fires right after the run).
                held = update(schedules).where(schedules.c.name == name)
                if not conn.execute(held.values(fire_requested_at=now, updated_at=now)).rowcount:
                    raise ScheduleNotFoundError(name)
            return self._row(conn, name)

    @transient_retry
    def _claim_once(self, node_id: str, limit: int, scope: ClaimScope) -> list[Claim]:
        with self._tx() as conn:
            now = conn.execute(self.now_query()).scalar_one()
            owned = self._owned(scope.buckets, scope.steal_after)
            req = claiming.request(node_id, limit, owned, now, scope.ahead, self)
            self.statements += 1
            if self.strategy.name == "unique-fire":
                rows, run_ids = claiming.unique_fire(conn, req, now)
                self.statements += 4
            else:
                ids = claiming.candidates(conn, req, lock=self.strategy.name == "skip-locked")
                rows = claiming.take(conn, req, ids, now)
                run_ids = {}
                self.statements += 3
            return self._record_runs(conn, node_id, rows, run_ids) if rows else []

    def _insert_runs(self, conn: Connection, params: list[dict[str, Any]]) -> dict[int, int]:
        conn.execute(self.insert_ignore(runs), params)
        # Ours are the rows written under our claims' fence tokens.
        keys = [(p["schedule_id"], p["scheduled_for"], p["attempt"], p["claim_seq"]) for p in params]
        found = conn.execute(
            select(runs.c.id, runs.c.schedule_id).where(
                tuple_(runs.c.schedule_id, runs.c.scheduled_for, runs.c.attempt, runs.c.claim_seq).in_(keys),
                runs.c.node == params[0]["node"],
            )
        )
        self.statements += 1
        return {r.schedule_id: r.id for r in found}

    @transient_retry
    def unclaim(self, node_id: str, claims: Sequence[Claim]) -> int:
        if not claims:
            return 0
        fences = [(c.schedule_id, c.claim_seq) for c in claims]
        held = tuple_(schedules.c.id, schedules.c.claim_seq).in_(fences)
        with self._tx() as conn:
            released = set(
                conn.scalars(select(schedules.c.id).where(held, schedules.c.state == "running").with_for_update()).all()
            )
            if released:
                conn.execute(update(schedules).where(schedules.c.id.in_(released)).values(**UNHELD))
            run_ids = [c.run_id for c in claims if c.schedule_id in released and c.run_id is not None]
            if run_ids:
                conn.execute(delete(runs).where(runs.c.id.in_(run_ids), runs.c.status == "running"))
        return len(released)

    def start_attempt(self, node_id: str, claim: Claim) -> int | None:
        with self._tx() as conn:
            now = conn.execute(select(self.now_expr())).scalar_one()
            seq = conn.scalar(
                select(schedules.c.claim_seq)
                .where(
                    schedules.c.id == claim.schedule_id,
                    schedules.c.claim_seq == claim.claim_seq,
                    schedules.c.state == "running",
                )
                .with_for_update()
            )
            conn.execute(
                update(schedules)
                .where(schedules.c.id == claim.schedule_id, schedules.c.claim_seq == claim.claim_seq)
                .values(claimed_at=bindparam("renewed_at", now, type_=UTCDateTime))
            )
            if seq is None:
                return None
            run = {
                "schedule_id": claim.schedule_id,
                "scheduled_for": claim.scheduled_for,
                "attempt": claim.attempt,
                "claim_seq": seq,
                "node": node_id,
                "started_at": now,
                "status": RunStatus.RUNNING.value,
            }
            # A plain INSERT: a duplicate fails only this statement (MySQL keeps the transaction),
            # and tells "already recorded" apart from "inserted", which an upsert's row count
            # does not under CLIENT_FOUND_ROWS.
            try:
                with conn.begin_nested():
                    inserted = conn.execute(runs.insert().values(**run))
            except IntegrityError:
                # Opened before under this very claim (the answer was lost): the same attempt.
                again = conn.scalar(
                    select(runs.c.id).where(
                        runs.c.schedule_id == claim.schedule_id,
                        runs.c.scheduled_for == claim.scheduled_for,
                        runs.c.attempt == claim.attempt,
                        runs.c.claim_seq == seq,
                        runs.c.node == node_id,
                        runs.c.status == RunStatus.RUNNING.value,
                    )
                )
                return None if again is None else int(again)
            key = inserted.inserted_primary_key
            return None if key is None else int(key[0])

    @transient_retry
    def reap_expired(self, grace_seconds: float) -> int:
        now = self.now_expr()
        deadline = self._plus_seconds(schedules.c.claimed_at, schedules.c.timeout_s + grace_seconds)
        with self._tx() as conn:
            expired: list[RowMapping] = list(
                conn.execute(
                    select(schedules.c.id, schedules.c.claim_seq, schedules.c.name)
                    .where(schedules.c.state == "running", deadline < now)
                    .with_for_update()
                )
                .mappings()
                .all()
            )
            if not expired:
                return 0
            conn.execute(update(schedules).where(schedules.c.id.in_([r["id"] for r in expired])).values(**UNHELD))
            conn.execute(
                update(runs)
                .where(
                    tuple_(runs.c.schedule_id, runs.c.claim_seq).in_([(r["id"], r["claim_seq"]) for r in expired]),
                    runs.c.status == "running",
                )
                .values(
                    status=RunStatus.TIMED_OUT.value,
                    finished_at=now,
                    error=f"hard timeout: claim not ended within timeout + {grace_seconds:g}s grace",
                )
            )
            for r in expired:
                log.warning("hard timeout: released %s (claim %s)", r["name"], r["claim_seq"])
        return len(expired)

    @transient_retry
    def heartbeat(self, node_id: str) -> datetime:
        now = self.now_expr()
        with self._tx() as conn:
            conn.execute(
                mysql.insert(nodes)
                .values(id=node_id, started_at=now, heartbeat_at=now)
                .on_duplicate_key_update(heartbeat_at=now)
            )
            value = conn.scalar(select(nodes.c.heartbeat_at).where(nodes.c.id == node_id))
        assert isinstance(value, datetime)
        return value
