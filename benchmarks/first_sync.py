"""A first deployment sync alone, in-process: ``sync_module`` of N declared jobs into a fresh store
(the part of a first start on an empty store that a restart does not pay; issue #42 §4).

Writes a module of N jobs that never fire while measured (``0 0 1 1 *``), imports it, makes a
fresh store (a new SQLite file, or a scratch database on the PostgreSQL or MariaDB server) with
its schema, and times the sync with the collector off: wall time and the process's CPU (the
database server's work is not in the CPU). ``--profile`` prints cProfile's top functions instead.

    python benchmarks/first_sync.py --store sqlite|postgres|mysql
    # before/after: a copy of another tree first on the path
    PYTHONPATH=/tmp/base/src:/tmp/base/plugins python benchmarks/first_sync.py --store postgres
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

from scratchdbs import drop_database, scratch_database
from tickwork.abc import Store
from tickwork.scheduling.declare import declared_in
from tickwork.scheduling.sync import sync_module

JOB = '\n@tickwork.cron("0 0 1 1 *")\ndef job_{i:06d}() -> None:\n    pass\n'


def fresh_store(kind: str, scratch: Path, admin_url: str) -> tuple[Store, str | None]:
    if kind == "sqlite":
        from tickwork_sqlite.store import SQLiteStore

        return SQLiteStore(str(scratch / "sync.db")), None
    url, database = scratch_database(kind, admin_url, "tw_first_sync")
    if kind == "postgres":
        from tickwork_postgres.store import PostgresStore

        return PostgresStore(url), database
    from tickwork_mysql.store import MySQLStore

    return MySQLStore(url), database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--store", choices=["sqlite", "postgres", "mysql"], default="sqlite")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--mysql-url", default="mysql://root@127.0.0.1:3306/mysql")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top 40 by cumulative time")
    args = parser.parse_args()
    admin_url = args.pg_url if args.store == "postgres" else args.mysql_url
    with tempfile.TemporaryDirectory(prefix="tw-first-sync-") as tmp:
        scratch = Path(tmp)
        module = f"firstsync_{args.jobs}"
        text = "import tickwork\n" + "".join(JOB.format(i=i) for i in range(args.jobs))
        (scratch / f"{module}.py").write_text(text, encoding="utf-8")
        sys.path.insert(0, str(scratch))
        jobs = declared_in(module)
        store, database = fresh_store(args.store, scratch, admin_url)
        try:
            store.upgrade()
            gc.disable()
            profiler = cProfile.Profile() if args.profile else None
            cpu, wall = time.process_time(), time.perf_counter()
            if profiler is not None:
                profiler.enable()
            report = sync_module(store, module, jobs)
            if profiler is not None:
                profiler.disable()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            gc.enable()
            store.close()
        finally:
            if database is not None:
                drop_database(args.store, admin_url, database)
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
    load = os.getloadavg()[0]
    print(f"{args.store}: {len(report.created)} created, wall {wall:.3f} s, cpu {cpu:.3f} s, load {load:.1f}")


if __name__ == "__main__":
    main()
