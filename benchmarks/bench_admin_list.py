"""Milliseconds per page of the admin API's ``list()`` (what a dashboard calls), with many schedules.

Run: ``.venv/bin/python benchmarks/bench_admin_list.py [--schedules 100000] [--store sqlite|postgres]
[--pg-url URL] [--page 50] [--repeat 20]``

Fills a scratch store with ``--schedules`` enabled schedules (a bulk insert: this measures reading,
not adding) plus one run each for a tenth of them, then times, through ``tickwork.connect``:
the first page, a page deep in the table (offset = half), a filtered page (``search``), ``count()``
and ``get()`` of one name. Each is the median of ``--repeat`` calls. The lead measures alone; in
the test suite only a tiny size is run to check that the script works.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select

import tickwork
from tickwork.sql.schema import runs, schedules
from tickwork.sql.store import SQLStore, spec_values
from tickwork.structures import ScheduleSpec
from tickwork_postgres.store import PostgresStore
from tickwork_sqlite.store import SQLiteStore

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def fill(store: SQLStore, count: int) -> None:
    now = store.now()
    rows = []
    for i in range(count):
        spec = ScheduleSpec(
            name=f"job-{i:07d}", trigger_kind="cron", expression="0 3 * * *", target="tests.jobs_for_tests:record"
        )
        rows.append(
            spec_values(spec) | {"next_fire": T0 + timedelta(seconds=i % 86400), "created_at": now, "updated_at": now}
        )
    with store.engine.begin() as conn:
        for start in range(0, count, 5000):
            conn.execute(insert(schedules), rows[start : start + 5000])
        ids = [r.id for r in conn.execute(select(schedules.c.id).where(schedules.c.id % 10 == 0))]
        run_rows = [
            {"schedule_id": i, "scheduled_for": T0, "attempt": 1, "status": "succeeded", "node": "bench"} for i in ids
        ]
        for start in range(0, len(run_rows), 5000):
            conn.execute(insert(runs), run_rows[start : start + 5000])


def median_ms(call: Callable[[], Any], repeat: int) -> float:
    call()  # warm-up: the first call opens the store and checks the schema
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        call()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=100_000)
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-url", help="an empty PostgreSQL database (required for --store postgres)")
    parser.add_argument("--page", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as scratch:
        config: dict[str, Any]
        if args.store == "sqlite":
            path = str(Path(scratch) / "bench.db")
            store: SQLStore = SQLiteStore(path)
            config = {"store": {"path": path}}
        else:
            if not args.pg_url:
                parser.error("--store postgres needs --pg-url")
            store = PostgresStore(args.pg_url)
            config = {"store": {"plugin": "postgres", "url": args.pg_url}}
        store.upgrade()
        store.open()
        try:
            fill(store, args.schedules)
        finally:
            store.close()
        with tickwork.connect(config) as admin:
            cases: dict[str, Callable[[], Any]] = {
                "list first page": lambda: admin.list(limit=args.page),
                "list page at half": lambda: admin.list(limit=args.page, offset=args.schedules // 2),
                "list search page": lambda: admin.list(search="job-00001", limit=args.page),
                "count": admin.count,
                "get": lambda: admin.get(f"job-{args.schedules // 2:07d}"),
            }
            print(f"{args.store}, {args.schedules} schedules, page {args.page}, median of {args.repeat}")
            for name, call in cases.items():
                print(f"  {name:<20} {median_ms(call, args.repeat):8.2f} ms")


if __name__ == "__main__":
    main()
