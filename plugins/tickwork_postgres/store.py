"""The PostgreSQL store: how several tickwork nodes share work (``pip install tickwork[postgres]``).

Changes are announced with ``NOTIFY tickwork_changes`` inside the changing transaction, so sleeping
nodes wake the moment it commits; the batched release is one ``UPDATE ... FROM (VALUES ...)``.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ARRAY,
    BigInteger,
    ColumnElement,
    Connection,
    DateTime,
    Engine,
    Integer,
    Select,
    Text,
    Update,
    bindparam,
    column,
    event,
    func,
    select,
    tuple_,
    type_coerce,
    update,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql.base import PGDialect
from sqlalchemy.engine import make_url

from tickwork.errors import ConfigError
from tickwork.sql import dburl
from tickwork.sql.claims import CLAIMED_COLUMNS, RUN_COLUMNS
from tickwork.sql.claims.base import started_runs
from tickwork.sql.claimturns import ClaimScope
from tickwork.sql.dialects import SQLTraits, declare
from tickwork.sql.engines import pooled_engine
from tickwork.sql.schema import UTCDateTime, runs, schedules
from tickwork.sql.serverstore import ServerStore
from tickwork.structures import Claim, Finish
from tickwork.structures import cap_error as cap

from .operations import CHANNEL, PostgresOperations
from .settings import PostgresSettings


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


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


class PostgresStore(ServerStore):
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

    def _fenced(self) -> ColumnElement[bool]:
        # Two arrays, not a list of pairs: one fixed statement (compiled once, prepared by
        # psycopg) whatever the number of fires; 400 pairs expanded into 800 parameters were
        # rendered and parsed anew at every start (docs/benchmarks.md#fenced-starts-at-1000-fires-at-once).
        pairs = (
            func.unnest(bindparam("s_ids", type_=ARRAY(BigInteger)), bindparam("s_seqs", type_=ARRAY(BigInteger)))
            .table_valued(column("id", BigInteger), column("seq", BigInteger))
            .render_derived(name="f")
        )
        return tuple_(schedules.c.id, schedules.c.claim_seq).in_(select(pairs.c.id, pairs.c.seq))

    def _fence_params(self, claims: Sequence[Claim]) -> dict[str, Any]:
        return {"s_ids": [c.schedule_id for c in claims], "s_seqs": [c.claim_seq for c in claims]}

    def _start_statement(self) -> Update:
        # The rows locked once (a materialized CTE), then updated by primary key. With the
        # locking read as the subquery of ``id IN``, PostgreSQL ran it again for every row it
        # updated (a nested loop: a start of N fires cost N^2, 200-460 ms for 400 fires of a
        # 1,000/s cluster, all of it lag). The locks make checking the condition again useless:
        # no other session can change a row this one holds until it commits.
        locked = self.operations.materialized(self._locked_ids(self._startable()).cte("startable"))
        return (
            update(schedules)
            .where(schedules.c.id == locked.c.id)
            .values(claimed_at=self._started_at())
            .returning(schedules.c.id)
        )

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

    def _release_and_end(self, conn: Connection, finishes: Sequence[Finish]) -> tuple[set[int], set[int]]:
        batch = json.dumps(
            [
                {
                    "id": f.claim.schedule_id,
                    "seq": f.claim.claim_seq,
                    "next": _iso(f.next_fire),
                    "run_id": f.claim.run_id,
                    "status": f.outcome.status.value,
                    "error": cap(f.outcome.error),
                    "started": _iso(f.started_at),
                    "finished": _iso(f.finished_at),
                }
                for f in finishes
            ]
        )
        rows = conn.execute(
            self._statement("pg_release_and_end", self._release_and_end_statement), {"f_batch": batch}
        ).all()
        self.statements += 1
        locked = {r.id for r in rows}
        busy = self.locked_elsewhere(conn, [f.claim.schedule_id for f in finishes if f.claim.schedule_id not in locked])
        return {r.id for r in rows if r.released}, busy

    def _release_and_end_statement(self) -> Select[Any]:
        # WITH f AS (the batch as one JSON document, jsonb_to_recordset), released AS (fenced UPDATE
        # of the schedules RETURNING id), UPDATE runs FROM f JOIN released: one fixed statement
        # (compiled once, prepared by psycopg) and one round trip per batch, whatever its size. A
        # VALUES list was recompiled per batch (22 % of a node's CPU); release and run ends as two
        # statements cost a round trip more; seven parameter arrays cost 28-38 % more node CPU per
        # end than one document serialized by the json module's C encoder (benchmarks.md).
        rows = (
            func.jsonb_to_recordset(bindparam("f_batch", type_=Text).cast(JSONB))
            .table_valued(
                column("id", BigInteger),
                column("seq", BigInteger),
                column("next", DateTime(timezone=True)),
                column("run_id", BigInteger),
                column("status", Text),
                column("error", Text),
                column("started", DateTime(timezone=True)),
                column("finished", DateTime(timezone=True)),
            )
            .render_derived(name="r", with_types=True)
        )
        f = select(rows).cte("f")
        # The batch's rows this transaction could lock: one another session holds (a stray
        # FOR UPDATE, a long transaction) is passed over and written later, not waited for.
        locked = (
            select(schedules.c.id)
            .where(schedules.c.id.in_(select(f.c.id).scalar_subquery()))
            .with_for_update(skip_locked=True)
            .cte("locked")
        )
        released = (
            update(schedules)
            .where(
                schedules.c.id == f.c.id,
                schedules.c.id.in_(select(locked.c.id).scalar_subquery()),
                schedules.c.claim_seq == f.c.seq,
                schedules.c.state == "running",
            )
            .values(**self.release_values(type_coerce(f.c.next, UTCDateTime)))
            .returning(schedules.c.id)
            .cte("released")
        )
        ended = (
            update(runs)
            .where(runs.c.id == f.c.run_id, f.c.id == released.c.id)
            .values(
                status=f.c.status,
                error=f.c.error,
                finished_at=func.coalesce(type_coerce(f.c.finished, UTCDateTime), self.now_expr()),
                started_at=func.coalesce(type_coerce(f.c.started, UTCDateTime), runs.c.started_at),
            )
            .cte("ended")
        )
        return (
            select(locked.c.id, released.c.id.is_not(None).label("released"))
            .select_from(locked.outerjoin(released, released.c.id == locked.c.id))
            .add_cte(ended)
        )

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
