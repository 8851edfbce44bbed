"""The PostgreSQL store: how several tickwork nodes share work (``pip install tickwork[postgres]``).

Changes are announced with ``NOTIFY tickwork_changes`` inside the changing transaction, so sleeping
nodes wake the moment it commits; the batched release is one ``UPDATE ... FROM (VALUES ...)``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import (
    ARRAY,
    BigInteger,
    Connection,
    DateTime,
    Engine,
    Integer,
    Select,
    Text,
    Update,
    bindparam,
    event,
    func,
    select,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql.base import PGDialect
from sqlalchemy.engine import make_url

from tickwork.errors import ConfigError
from tickwork.sql import dburl
from tickwork.sql.claims import CLAIMED_COLUMNS, RUN_COLUMNS
from tickwork.sql.claims.base import started_runs
from tickwork.sql.claimturns import ClaimScope
from tickwork.sql.dialects import SQLTraits, declare
from tickwork.sql.engines import pooled_engine
from tickwork.sql.schema import runs
from tickwork.structures import Finish

from .backfilltake import PostgresBackfills
from .operations import CHANNEL, PostgresOperations
from .roundtrips import PostgresRoundTrips, end_batch
from .settings import PostgresSettings

log = logging.getLogger("tickwork.postgres")


declare(PGDialect, SQLTraits(epoch_micros=False))


def sqlalchemy_url(url: str) -> str:
    """Accept ``postgresql://`` / ``postgres://`` URLs and pin the psycopg 3 driver.

    Errors name the part that is wrong, never the URL: after ``${ENV}`` expansion it holds the password.
    """
    parsed = dburl.parse(url, "url", "postgresql://user:password@host:port/dbname")
    if parsed.drivername not in ("postgresql+psycopg", "postgresql", "postgres"):
        raise ConfigError(f"url: expected a postgresql:// URL, got {parsed.drivername!r}://...")
    return "postgresql+psycopg://" + url.partition("://")[2]


class PostgresStore(PostgresBackfills, PostgresRoundTrips):
    """PostgreSQL store; its options: :class:`~tickwork_postgres.settings.PostgresSettings`.

    :param url: ``postgresql://user:password@host:port/dbname`` (``${ENV}`` is expanded by the config)
    """

    database_label = "postgresql"
    database_title = "PostgreSQL"
    watcher_name = "tickwork-pg-listen"
    operations_class = PostgresOperations
    section = PostgresSettings
    claim_strategies = PostgresSettings.claim.options
    sqlalchemy_url = staticmethod(sqlalchemy_url)

    def _create_engine(self) -> Engine:
        try:
            import psycopg  # noqa: F401
        except ImportError as exc:  # pragma: no cover - depends on the installation
            raise ConfigError("the postgres store needs psycopg: pip install 'tickwork[postgres]'") from exc
        engine = pooled_engine(self.url, pool_size=self.pool_size, connect_args={"connect_timeout": 5})
        settings = f"SET lock_timeout = {round(self.lock_timeout * 1000)}; SET statement_timeout = " + str(
            round(self.statement_timeout * 1000)
        )

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            # Every connection: a row another session holds locked (a stray FOR UPDATE, a long
            # transaction) fails a statement after lock_timeout, a store fault the node logs and
            # backs off from, instead of stalling its loop silently (the hot paths skip locked
            # rows anyway). Whole milliseconds from checked numbers: nothing to bind.
            with dbapi_conn.cursor() as cur:
                cur.execute(settings)
            dbapi_conn.commit()

        return engine

    def _insert_runs(self, conn: Connection, params: list[dict[str, Any]]) -> dict[int, int]:
        # INSERT ... SELECT FROM unnest(arrays): one fixed statement (cached by SQLAlchemy and
        # prepared by psycopg) however many rows; a multi-row VALUES text is rebuilt and re-parsed
        # for every batch (measured: 18 ms per batch of 100, most of it client-side).
        cols = ("schedule_id", "scheduled_for", "attempt", "claim_seq", "node", "started_at", "status", "version")
        types: tuple[Any, ...] = (
            BigInteger,
            DateTime(timezone=True),
            Integer,
            BigInteger,
            Text,
            DateTime(timezone=True),
            Text,
            Integer,
        )
        src = (
            func.unnest(
                *(bindparam(f"a_{c}", [p[c] for p in params], type_=ARRAY(t)) for c, t in zip(cols, types, strict=True))
            )
            .table_valued(*cols)
            .render_derived(name="r")
        )
        stmt = (
            postgresql.insert(runs)
            .from_select(list(cols), select(*(src.c[c] for c in cols)))
            .on_conflict_do_nothing()
            .returning(runs.c.id, runs.c.schedule_id)
        )
        return {r.schedule_id: r.id for r in conn.execute(stmt)}

    claim_records_runs = True

    def _claim_statement(self, take: Update) -> Select[Any]:
        # WITH claimed AS (UPDATE ... RETURNING), recorded AS (INSERT INTO runs SELECT FROM
        # claimed ON CONFLICT DO NOTHING RETURNING) SELECT claimed LEFT JOIN recorded: the history
        # rows are written from the claimed rows inside the database, in the same round trip.
        claimed = take.returning(*CLAIMED_COLUMNS).cte("claimed")
        fires = started_runs(
            claimed.c.id,
            claimed.c.next_fire,
            claimed.c.claim_seq,
            bindparam("claim_node", type_=Text),
            claimed.c.claimed_at,
            claimed.c.version,
        )
        recorded = (
            postgresql.insert(runs)
            .from_select(list(RUN_COLUMNS), fires)
            .on_conflict_do_nothing()
            .returning(runs.c.id, runs.c.schedule_id)
            .cte("recorded")
        )
        return select(*claimed.c, recorded.c.id.label("run_id")).select_from(
            claimed.outerjoin(recorded, recorded.c.schedule_id == claimed.c.id)
        )

    def explain_claim(
        self,
        node_id: str = "explain",
        *,
        limit: int = 100,
        buckets: Sequence[int] | None = None,
        ahead: float = 0.0,
        steal_after: float | None = None,
    ) -> str:
        """PostgreSQL's plan (``EXPLAIN``, not run) for the statement :meth:`claim_due` sends with
        these arguments, with its parameters bound as they are sent: a diagnostic for what a
        claim costs as the table grows (benchmarks/explain_due_query.py, tests/plugins/postgres/test_claim_plans.py).

        :raises ValueError: for a claim strategy that does not claim with one statement built
            ahead (those that read first or claim in several statements)
        """
        if not self.strategy.single_update or self.strategy.reads_first:
            raise ValueError(
                f"claim strategy {self.strategy.name!r} does not claim with one statement built ahead; "
                "explain_claim explains skip-locked"
            )
        limit = max(1, min(limit, self.batch_size))
        scope = ClaimScope.of(buckets, ahead, steal_after)
        with self._tx() as conn:
            stmt = self._single_claim_statement(conn, self._claim_request(node_id, limit, scope), scope)
            compiled = stmt.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
            params = compiled.construct_params(self._claim_params(node_id, limit, scope))
            rows = conn.exec_driver_sql(f"EXPLAIN (COSTS OFF) {compiled}", params).scalars().all()
        return "\n".join(rows)

    def explain_ends(self, finishes: Sequence[Finish]) -> str:
        """PostgreSQL's plan (``EXPLAIN``, not run) for the statement that releases and ends the
        batch ``finishes`` (:meth:`finish`), its document bound as it is sent: a diagnostic like
        :meth:`explain_claim` (tests/plugins/postgres/test_claim_plans.py)."""
        with self._tx() as conn:
            stmt = self._statement("pg_release_and_end", self._release_and_end_statement)
            compiled = stmt.compile(dialect=conn.dialect)
            params = compiled.construct_params({"f_batch": end_batch(finishes)})
            rows = conn.exec_driver_sql(f"EXPLAIN (COSTS OFF) {compiled}", params).scalars().all()
        return "\n".join(rows)

    def listen(self, wake: Callable[[], None]) -> None:
        self._watcher.start(self._watch, wake)

    def _watch(self, wake: Callable[[], None], stop: threading.Event) -> None:
        import psycopg

        dsn = make_url(self.url).set(drivername="postgresql").render_as_string(hide_password=False)
        backoff = 0.5
        while not stop.is_set():
            try:
                with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    backoff = 0.5
                    wake()  # changes may have happened while we were not listening
                    while not stop.is_set():
                        for _ in conn.notifies(timeout=0.5, stop_after=1000):
                            wake()
            except psycopg.Error as exc:
                log.warning("LISTEN connection lost (%s); retrying in %.1fs", exc, backoff)
                stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)
