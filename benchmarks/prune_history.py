"""History pruning per store: rows deleted per second and the longest single statement.

Run: ``.venv/bin/python benchmarks/prune_history.py [N] [--stores sqlite,postgres,mysql]
[--batch 10000] [--pg-url URL] [--mysql-url URL]``

Fills a scratch database of each store with ``N`` (default 1,000,000) runs that ended 40 days
ago, plus 1 % recent and a few running ones (which must stay), spread over 100 schedules, then
prunes everything older than 30 days the way a node does (:class:`tickwork.engine.pruning.
HistoryPruner`: ``prune_history(limit=batch)`` until a batch comes back short), timing each call.
The server databases are created and dropped by the script. The lead measures alone; only a small
``N`` is run to check that the script works.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from sqlalchemy import create_engine, insert, select, text
from sqlalchemy.engine import make_url

from tickwork.sql.schema import runs, schedules
from tickwork.sql.store import SQLStore, spec_values
from tickwork.structures import ScheduleSpec
from tickwork_mysql.store import MySQLStore
from tickwork_postgres.store import PostgresStore
from tickwork_sqlite.store import SQLiteStore

SCHEDULES = 100
RETENTION = timedelta(days=30)


def fill(store: SQLStore, count: int) -> int:
    """``count`` old ended runs plus 1 % recent and one running per schedule; the rows to keep."""
    now = store.now()
    old, recent = now - timedelta(days=40), now - timedelta(hours=1)
    with store.engine.begin() as conn:
        conn.execute(
            insert(schedules),
            [
                spec_values(
                    ScheduleSpec(name=f"job-{i:03d}", trigger_kind="cron", expression="* * * * *", target="m:f")
                )
                | {"next_fire": now + timedelta(days=1), "created_at": now, "updated_at": now}
                for i in range(SCHEDULES)
            ],
        )
        ids = list(conn.scalars(select(schedules.c.id).order_by(schedules.c.id)))
        keep = count // 100 + len(ids)

        def rows(start: int, stop: int) -> list[dict[str, object]]:
            out: list[dict[str, object]] = []
            for n in range(start, stop):
                ended = old if n < count else recent
                running = n >= count + count // 100
                out.append(
                    {
                        "schedule_id": ids[n % len(ids)],
                        "scheduled_for": old - timedelta(minutes=n),
                        "attempt": 1,
                        "node": "bench",
                        "started_at": ended,
                        "finished_at": None if running else ended,
                        "status": "running" if running else "succeeded",
                    }
                )
            return out

        total = count + keep
        for start in range(0, total, 10_000):
            conn.execute(insert(runs), rows(start, min(total, start + 10_000)))
    store.refresh_statistics()
    return keep


def measure(name: str, store: SQLStore, count: int, batch: int) -> None:
    keep = fill(store, count)
    times: list[float] = []
    deleted = 0
    started = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        n = store.prune_history(RETENTION, limit=batch)
        times.append(time.perf_counter() - t0)
        deleted += n
        if n < batch:
            break
    elapsed = time.perf_counter() - started
    with store.engine.connect() as conn:
        left = conn.execute(select(runs.c.id)).all()
    assert deleted == count and len(left) == keep, (deleted, count, len(left), keep)
    print(
        f"{name:9} {count:>10,} rows in {elapsed:7.2f} s: {count / elapsed:>10,.0f} rows/s; "
        f"{len(times)} statements of <= {batch:,}, longest {max(times) * 1000:8.1f} ms"
    )


@contextmanager
def server_database(admin_url: str, name: str, create: str, drop: str) -> Iterator[str]:
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(drop.format(name)))
        conn.execute(text(create.format(name)))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(drop.format(name)))
        admin.dispose()


def run_store(kind: str, args: argparse.Namespace) -> None:
    scratch = f"tickwork_prune_{int(time.time())}"
    make: Callable[[str], SQLStore]
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            store = SQLiteStore(str(Path(tmp) / "prune.db"))
            store.open()
            try:
                measure(kind, store, args.n, args.batch)
            finally:
                store.close()
        return
    if kind == "postgres":
        ctx = server_database(args.pg_url, scratch, "CREATE DATABASE {}", "DROP DATABASE IF EXISTS {}")
        make = PostgresStore
    elif kind == "mysql":
        ctx = server_database(args.mysql_url, scratch, "CREATE DATABASE {}", "DROP DATABASE IF EXISTS {}")
        make = MySQLStore
    else:
        raise SystemExit(f"unknown store {kind!r}")
    with ctx as url:
        store = make(url)
        store.upgrade()
        store.open()
        try:
            measure(kind, store, args.n, args.batch)
        finally:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("n", nargs="?", type=int, default=1_000_000, help="old history rows to prune")
    parser.add_argument("--stores", default="sqlite,postgres,mysql")
    parser.add_argument("--batch", type=int, default=10_000, help="rows per statement")
    parser.add_argument("--pg-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--mysql-url", default="mysql+pymysql://root@127.0.0.1:3306/mysql")
    args = parser.parse_args()
    for kind in args.stores.split(","):
        run_store(kind.strip(), args)


if __name__ == "__main__":
    main()
