"""Show PostgreSQL's plan for "what is due now" — the claim and next-due statements tickwork
issues — on an existing tickwork database, so the cost can be checked against the number of due
schedules rather than the number stored (docs/claim-strategies.md quotes a run on 1M rows).

    python benchmarks/explain_due_query.py postgresql://postgres@127.0.0.1:5432/tw_explain

Claims run inside a transaction that is rolled back, so the database is left as it was.
"""

from __future__ import annotations

import sys
from typing import Any

from sqlalchemy import Connection, func, select

from tickwork.sql.claims import STRATEGIES, ClaimRequest
from tickwork.sql.schema import claimable, schedules
from tickwork_membership.ring import BucketRing
from tickwork_postgres.store import PostgresStore


def explain(conn: Connection, stmt: Any) -> str:
    # Bound, not rendered as literals: the owned-bucket mask is a bytea parameter (literal
    # rendering of binary values is not supported), and the plan should be the one of the
    # parameterized statement a node sends.
    compiled = stmt.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    params = compiled.construct_params()
    rows = conn.exec_driver_sql(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {compiled}", params).scalars().all()
    return "\n".join(rows)


def main(url: str) -> None:
    store = PostgresStore(url)
    store.open()
    owned = BucketRing(["node-a", "node-b", "node-c"]).buckets_of("node-a")
    with store.engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(schedules)).scalar_one()
        due = conn.execute(
            select(func.count()).select_from(schedules).where(schedules.c.next_fire <= func.now())
        ).scalar_one()
        conn.rollback()
        print(f"# {total} schedules, {due} due now; a hash-ring node of 3 owns {len(owned)} of 1024 buckets\n")
        now = func.statement_timestamp()
        for title, buckets in (("all buckets", None), ("hash-ring owner of 3", owned)):
            req = ClaimRequest("explain", 100, store._owned(buckets), now, sql=store)
            # Capture the statements the strategy executes, then explain each one.
            for name in ("skip-locked", "optimistic"):
                captured: list[Any] = []
                real_execute = conn.execute

                def capture(stmt: Any, *args: Any, _c: list[Any] = captured, _e: Any = real_execute, **kw: Any) -> Any:
                    _c.append(stmt)
                    return _e(stmt, *args, **kw)

                trans = conn.begin()
                conn.execute = capture  # type: ignore[method-assign]
                try:
                    STRATEGIES[name]().claim(conn, req)
                finally:
                    conn.execute = real_execute  # type: ignore[method-assign]
                for stmt in captured:
                    print(f"## claim {name}, {title}\n{explain(conn, stmt)}\n")
                trans.rollback()
            nxt = select(func.min(schedules.c.next_fire)).where(claimable())
            if buckets is not None:
                nxt = nxt.where(store._owned(buckets))  # type: ignore[arg-type]
            print(f"## next due, {title}\n{explain(conn, nxt)}\n")
            conn.rollback()
    store.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "postgresql://postgres@127.0.0.1:5432/tw_explain")
