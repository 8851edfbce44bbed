"""What the admin-side benchmarks share: a scratch store (SQLite file or an empty PostgreSQL
database) filled with many schedules by bulk insert, and the median of repeated calls.

The benchmarks measure reading, not adding, so the fill bypasses the admin API.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert

from tickwork.sql.schema import schedules
from tickwork.sql.store import SQLStore, spec_values
from tickwork.structures import ScheduleSpec
from tickwork_postgres.store import PostgresStore
from tickwork_sqlite.store import SQLiteStore

T0 = datetime(2030, 1, 1, tzinfo=UTC)
CHUNK = 5000


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every admin-side benchmark takes: the store, its size, the page, the repeats."""
    parser.add_argument("--schedules", type=int, default=100_000)
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-url", help="an empty PostgreSQL database (required for --store postgres)")
    parser.add_argument("--page", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=20)


@contextmanager
def scratch_store(
    parser: argparse.ArgumentParser, args: argparse.Namespace, scratch: str
) -> Iterator[tuple[SQLStore, dict[str, Any]]]:
    """An upgraded, open store of ``args.store`` and the configuration ``tickwork.connect`` needs
    to reach it; the store is closed on leaving."""
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
        yield store, config
    finally:
        store.close()


def fill_schedules(store: SQLStore, count: int) -> None:
    """``count`` enabled daily cron schedules ``job-0000000``..., their next fires spread over a day."""
    now = store.now()
    rows = [
        spec_values(ScheduleSpec(f"job-{i:07d}", "cron", "0 3 * * *", "tests.support.jobs_for_tests:record"))
        | {"next_fire": T0 + timedelta(seconds=i % 86400), "created_at": now, "updated_at": now}
        for i in range(count)
    ]
    with store.engine.begin() as conn:
        for start in range(0, count, CHUNK):
            conn.execute(insert(schedules), rows[start : start + CHUNK])


def median_ms(call: Callable[[], Any], repeat: int) -> float:
    """The median of ``repeat`` timed calls in milliseconds, after one untimed warm-up call (the
    first call opens the store and checks the schema)."""
    call()
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        call()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)
