"""Page times of the web dashboard on a store with many schedules (issue #14: 100,000).

Run (the measurement belongs on an otherwise idle machine):

    .venv/bin/python benchmarks/bench_web_pages.py --schedules 100000
    .venv/bin/python benchmarks/bench_web_pages.py --schedules 100000 --postgres postgresql://postgres@127.0.0.1:5432/tw_web_bench

It seeds a fresh store (SQLite in a temporary directory, or the given PostgreSQL database, whose
tickwork tables are emptied first) with N cron schedules and a history row for every tenth one
(a third of those failed), starts ``tickwork web`` as a real process on a free loopback port, and
fetches each page ``--repeat`` times over HTTP after one warm-up request. It prints the median,
the 95th percentile and the slowest time per page in milliseconds, and ``--json FILE`` writes them.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import delete, insert, select

from tickwork.sql.schema import runs, schedules
from tickwork.sql.store import SQLStore
from tickwork_bench.scratch import schedule_rows
from tickwork_postgres.store import PostgresStore
from tickwork_sqlite.store import SQLiteStore

CHUNK = 5000
EVERY_NTH_RAN = 10
REPO = Path(__file__).resolve().parent.parent


def pages(total: int) -> list[tuple[str, str]]:
    """(label, path) of what an operator opens; the middle of the list is a deep page."""
    middle = max(1, total // 2 // 50)
    probe = f"idle-{total // 3:08d}"
    return [
        ("schedules, first page", "/"),
        ("schedules, live fragment", "/?fragment=1"),
        (f"schedules, page {middle}", f"/?page={middle}"),
        ("schedules, search", f"/?q={probe}"),
        ("schedules, failing", "/?show=failing"),
        ("schedules, disabled (none)", "/?show=disabled"),
        ("schedule page", f"/schedules/{probe}"),
        ("runs page", "/runs"),
        ("runs, failed", "/runs?status=failed"),
        ("nodes page", "/nodes"),
        ("API schedules (100)", "/api/schedules"),
        ("API schedule", f"/api/schedules/{probe}"),
        ("API runs (100)", "/api/runs"),
    ]


def seed(store: SQLStore, total: int) -> None:
    store.upgrade()
    store.open()
    now = datetime.now(UTC)
    with store.engine.begin() as conn:
        conn.execute(delete(runs))
        conn.execute(delete(schedules))
        for first in range(0, total, CHUNK):
            rows = schedule_rows(
                first,
                min(CHUNK, total - first),
                kind="cron",
                expression=lambda i: f"{i % 60} {i % 24} * * *",
                next_fire=lambda i: now + timedelta(hours=1) + timedelta(seconds=(i * 7919) % 86400),
                prefix="idle",
            )
            conn.execute(insert(schedules), rows)
        ids = conn.execute(select(schedules.c.id).order_by(schedules.c.id)).scalars().all()
        history = []
        for n, schedule_id in enumerate(ids[::EVERY_NTH_RAN]):
            failed = n % 3 == 0
            started = now - timedelta(minutes=n % 600)
            history.append(
                {
                    "schedule_id": schedule_id,
                    "scheduled_for": started,
                    "attempt": 1,
                    "node": "bench-node",
                    "started_at": started,
                    "finished_at": started + timedelta(seconds=1.5),
                    "status": "failed" if failed else "succeeded",
                    "error": "Traceback (most recent call last):\n  ...\nRuntimeError: bench" if failed else None,
                }
            )
            if len(history) == CHUNK:
                conn.execute(insert(runs), history)
                history = []
        if history:
            conn.execute(insert(runs), history)
    store.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def web(config: Path) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("TICKWORK_WEB_TOKEN", None)
    child = subprocess.Popen(
        [sys.executable, "-m", "tickwork", "-c", str(config), "--log-level", "WARNING", "web", "--port", str(port)],
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            if child.poll() is not None:
                raise SystemExit(f"tickwork web exited with {child.returncode}")
            try:
                httpx.get(base + "/nodes", timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield base
    finally:
        child.terminate()
        child.wait(30)


def measure(base: str, path: str, repeat: int) -> dict[str, Any]:
    with httpx.Client(base_url=base, timeout=120) as client:
        first = client.get(path)
        if first.status_code != 200:
            raise SystemExit(f"{path}: HTTP {first.status_code}: {first.text[:300]}")
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            client.get(path).raise_for_status()
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    return {"median_ms": statistics.median(times), "p95_ms": p95, "max_ms": times[-1], "bytes": len(first.content)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schedules", type=int, default=100_000, help="stored schedules (default 100000)")
    parser.add_argument("--repeat", type=int, default=20, help="timed requests per page (default 20)")
    parser.add_argument("--postgres", metavar="URL", help="use this PostgreSQL database instead of SQLite")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tw-web-bench-") as tmp:
        directory = Path(tmp)
        config = directory / "tickwork.toml"
        if args.postgres:
            store: SQLStore = PostgresStore(args.postgres)
            config.write_text(f'[store]\nplugin = "postgres"\nurl = "{args.postgres}"\n', encoding="utf-8")
        else:
            path = directory / "bench.db"
            store = SQLiteStore(str(path))
            config.write_text(f'[store]\nplugin = "sqlite"\npath = "{path}"\n', encoding="utf-8")
        started = time.perf_counter()
        seed(store, args.schedules)
        print(f"seeded {args.schedules} schedules in {time.perf_counter() - started:.1f} s ({store.describe()})")
        results: dict[str, Any] = {"schedules": args.schedules, "store": store.describe(), "pages": {}}
        with web(config) as base:
            print(f"{'page':<30} {'median ms':>10} {'p95 ms':>10} {'max ms':>10} {'KiB':>8}")
            for label, path in pages(args.schedules):
                found = measure(base, path, args.repeat)
                results["pages"][label] = {"path": path, **found}
                print(
                    f"{label:<30} {found['median_ms']:>10.1f} {found['p95_ms']:>10.1f} "
                    f"{found['max_ms']:>10.1f} {found['bytes'] / 1024:>8.1f}"
                )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
