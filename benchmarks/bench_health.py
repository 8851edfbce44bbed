"""Milliseconds to show schedule health on one page (``jobs list``, the dashboard's first page)
with many schedules and a history, and the query plan of the per-schedule read.

Run: ``.venv/bin/python benchmarks/bench_health.py [--schedules 100000] [--history 10]
[--store sqlite|postgres] [--pg-url URL] [--page 50] [--repeat 20]``

Fills a scratch store with ``--schedules`` enabled schedules (a bulk insert) and ``--history``
runs each (every tenth schedule failing ones, every hundredth ``RECENT_RUNS + 5`` failures so
that its last success lies outside the recent window and costs one more read), then times,
through ``tickwork.connect``: the first page of ``list()`` with health, the same page's
``find_schedules`` alone (the cost without health), ``get()``, ``check()`` of one schedule and,
last, ``count(health="failing")``, which assesses every schedule (the health filter). Each is the
median of ``--repeat`` calls (the full-scan case: of ``--repeat-full``). The plan shows the read
``recent_runs`` sends per schedule. The lead measures alone; the test suite runs a tiny size.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import insert, select, text

import tickwork
from scratchstores import CHUNK, T0, add_store_arguments, fill_schedules, median_ms, scratch_store
from tickwork.admin.health import RECENT_RUNS
from tickwork.sql.schema import runs, schedules
from tickwork.sql.store import SQLStore


def fill(store: SQLStore, count: int, history: int) -> None:
    fill_schedules(store, count)
    with store.engine.begin() as conn:
        ids = [r.id for r in conn.execute(select(schedules.c.id))]
        batch: list[dict[str, Any]] = []
        for n, schedule_id in enumerate(ids):
            runs_here = RECENT_RUNS + 5 if n % 100 == 0 else history
            for k in range(runs_here):
                failing = (n % 10 == 0 and k >= runs_here - 3) or (n % 100 == 0 and k > 0)
                started = T0 - timedelta(days=runs_here - k)
                batch.append(
                    {
                        "schedule_id": schedule_id,
                        "scheduled_for": started,
                        "attempt": 1,
                        "status": "failed" if failing else "succeeded",
                        "error": "RuntimeError: bench" if failing else None,
                        "node": "bench",
                        "started_at": started,
                        "finished_at": started + timedelta(seconds=1 + k % 5),
                    }
                )
                if len(batch) >= CHUNK:
                    conn.execute(insert(runs), batch)
                    batch = []
        if batch:
            conn.execute(insert(runs), batch)


def plan(store: SQLStore, backend: str) -> list[str]:
    """The database's plan of one per-schedule read of ``recent_runs``."""
    query = "SELECT * FROM tickwork_runs WHERE schedule_id = 1 ORDER BY scheduled_for DESC, attempt DESC LIMIT 20"
    with store.engine.connect() as conn:
        if backend == "sqlite":
            return [str(row[-1]) for row in conn.execute(text("EXPLAIN QUERY PLAN " + query))]
        return [str(row[0]) for row in conn.execute(text("EXPLAIN " + query))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_store_arguments(parser)
    parser.add_argument("--history", type=int, default=10, help="runs per schedule")
    parser.add_argument("--repeat-full", type=int, default=1)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as scratch:
        with scratch_store(parser, args, scratch) as (store, config):
            fill(store, args.schedules, args.history)
            if args.store == "postgres":
                with store.engine.begin() as conn:
                    conn.execute(text("ANALYZE"))
            query_plan = plan(store, args.store)
        with tickwork.connect(config) as admin:
            raw = admin.store()
            name = f"job-{args.schedules // 2:07d}"
            cases: dict[str, tuple[Callable[[], Any], int]] = {
                "list first page": (lambda: admin.list(limit=args.page), args.repeat),
                "page without health": (lambda: raw.find_schedules(limit=args.page), args.repeat),
                "get": (lambda: admin.get(name), args.repeat),
                "check one": (lambda: admin.check([name]), args.repeat),
                "count health=failing": (lambda: admin.count(health="failing"), args.repeat_full),
            }
            print(
                f"{args.store}, {args.schedules} schedules, {args.history} runs each, page {args.page}, "
                f"median of {args.repeat}"
            )
            for label, (call, repeat) in cases.items():
                print(f"  {label:<22} {median_ms(call, repeat):10.2f} ms")
        print("plan of one recent_runs read:")
        for line in query_plan:
            print(f"  {line}")


if __name__ == "__main__":
    main()
