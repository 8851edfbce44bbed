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
import tempfile
from collections.abc import Callable
from typing import Any

from sqlalchemy import insert, select

import tickwork
from scratchstores import T0, add_store_arguments, fill_schedules, median_ms, scratch_store
from tickwork.sql.schema import runs, schedules
from tickwork.sql.store import SQLStore


def fill(store: SQLStore, count: int) -> None:
    """The schedules, and one succeeded run each for a tenth of them."""
    fill_schedules(store, count)
    with store.engine.begin() as conn:
        ids = [r.id for r in conn.execute(select(schedules.c.id).where(schedules.c.id % 10 == 0))]
        run_rows = [
            {"schedule_id": i, "scheduled_for": T0, "attempt": 1, "status": "succeeded", "node": "bench"} for i in ids
        ]
        for start in range(0, len(run_rows), 5000):
            conn.execute(insert(runs), run_rows[start : start + 5000])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_store_arguments(parser)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as scratch:
        with scratch_store(parser, args, scratch) as (store, config):
            fill(store, args.schedules)
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
