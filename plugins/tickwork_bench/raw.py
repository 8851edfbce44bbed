"""The ceiling: the same claim → run rows → release cycle with the bare driver and no framework.

Per batch of up to 100 due schedules, in the tables tickwork uses:

1. one transaction: claim (PostgreSQL: ``UPDATE`` over a ``FOR UPDATE SKIP LOCKED`` CTE; SQLite:
   ``UPDATE ... WHERE id IN (SELECT ... LIMIT n)`` under ``BEGIN IMMEDIATE``) and insert the run rows;
2. one transaction: release the schedules (fenced on ``claim_seq``) with their next fire time and
   mark the runs succeeded.

Workers are ``python -m tickwork_bench.raw`` processes; they start polling when ready, stop
claiming at their first empty claim after the first full one, and report when told to stop.
"""

from __future__ import annotations

import argparse
import json
import resource
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from .cells import Cell
from .metrics import CellResult, burst_metrics
from .procs import ChildError
from .progress import Progress
from .scratch import Armed, Scratch
from .workloads import CpuMeter, Settings, add_cpu_shares, due_set_for, start_children, stop_children, wait_burst

PG_CLAIM = """
WITH locked AS MATERIALIZED (
    SELECT id FROM tickwork_schedules
    WHERE enabled AND state = 'idle' AND next_fire <= statement_timestamp()
    ORDER BY next_fire LIMIT %(n)s FOR UPDATE SKIP LOCKED)
UPDATE tickwork_schedules s
SET state = 'running', claimed_by = %(node)s, claimed_at = statement_timestamp(), claim_seq = s.claim_seq + 1
FROM locked WHERE s.id = locked.id
RETURNING s.id, s.next_fire, s.claim_seq, s.claimed_at
"""
PG_INSERT_RUNS = """
INSERT INTO tickwork_runs (schedule_id, scheduled_for, attempt, claim_seq, node, started_at, status)
SELECT v.id, v.due, 1, v.seq, %(node)s, v.started, 'running'
FROM unnest(%(ids)s::bigint[], %(dues)s::timestamptz[], %(seqs)s::bigint[], %(starts)s::timestamptz[])
    AS v(id, due, seq, started)
RETURNING id
"""
PG_RELEASE = """
UPDATE tickwork_schedules s SET state = 'idle', claimed_by = NULL, claimed_at = NULL, next_fire = %(next)s
FROM unnest(%(ids)s::bigint[], %(seqs)s::bigint[]) AS v(id, seq)
WHERE s.id = v.id AND s.claim_seq = v.seq AND s.state = 'running'
"""
PG_FINISH_RUNS = """
UPDATE tickwork_runs SET status = 'succeeded', finished_at = statement_timestamp() WHERE id = ANY(%(ids)s)
"""

SQLITE_NOW = "CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)"
SQLITE_CLAIM = f"""
UPDATE tickwork_schedules
SET state = 'running', claimed_by = ?, claimed_at = {SQLITE_NOW}, claim_seq = claim_seq + 1
WHERE id IN (
    SELECT id FROM tickwork_schedules
    WHERE enabled AND state = 'idle' AND next_fire <= {SQLITE_NOW}
    ORDER BY next_fire LIMIT ?)
  AND enabled AND state = 'idle' AND next_fire <= {SQLITE_NOW}
RETURNING id, next_fire, claim_seq, claimed_at
"""
SQLITE_INSERT_RUN = """
INSERT INTO tickwork_runs (schedule_id, scheduled_for, attempt, claim_seq, node, started_at, status)
VALUES (?, ?, 1, ?, ?, ?, 'running') RETURNING id
"""
SQLITE_RELEASE = """
UPDATE tickwork_schedules SET state = 'idle', claimed_by = NULL, claimed_at = NULL, next_fire = ?
WHERE id = ? AND claim_seq = ? AND state = 'running'
"""


@dataclass
class RawCounters:
    worker_id: str = ""
    claimed: int = 0
    claim_calls: int = 0
    db_statements: int = 0
    commits: int = 0
    cpu_seconds: float = 0.0
    maxrss_mb: float = 0.0


def next_year() -> datetime:
    return datetime(datetime.now(UTC).year + 1, 1, 1, tzinfo=UTC)


class RawWorker:
    """One claiming loop; subclasses hold the driver calls."""

    def __init__(self, worker_id: str, batch: int) -> None:
        self.counters = RawCounters(worker_id=worker_id)
        self.batch = batch
        self.stop = threading.Event()

    def claim_batch(self) -> int:
        raise NotImplementedError

    def run(self) -> RawCounters:
        started = False
        cpu0 = 0.0
        while not self.stop.is_set():
            if not started:
                # Polls before the due instant are not part of the measured work.
                self.counters = RawCounters(worker_id=self.counters.worker_id)
                cpu0 = _cpu()
            got = self.claim_batch()
            if got:
                started = True
            elif started:
                break
            else:
                time.sleep(0.002)
        self.stop.wait()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        self.counters.cpu_seconds = (usage.ru_utime + usage.ru_stime - cpu0) if started else 0.0
        self.counters.maxrss_mb = usage.ru_maxrss / 1024.0
        return self.counters


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class PostgresRawWorker(RawWorker):
    def __init__(self, worker_id: str, batch: int, url: str) -> None:
        super().__init__(worker_id, batch)
        import psycopg

        self.conn = psycopg.connect(url)
        self.next_fire = next_year()

    def claim_batch(self) -> int:
        c = self.counters
        cur = self.conn.cursor()
        rows = cur.execute(PG_CLAIM, {"n": self.batch, "node": c.worker_id}).fetchall()
        c.claim_calls += 1
        c.db_statements += 1
        if not rows:
            self.conn.commit()
            c.commits += 1
            return 0
        ids = [r[0] for r in rows]
        seqs = [r[2] for r in rows]
        run_ids = cur.execute(
            PG_INSERT_RUNS,
            {
                "node": c.worker_id,
                "ids": ids,
                "dues": [r[1] for r in rows],
                "seqs": seqs,
                "starts": [r[3] for r in rows],
            },
        ).fetchall()
        self.conn.commit()
        cur.execute(PG_RELEASE, {"next": self.next_fire, "ids": ids, "seqs": seqs})
        cur.execute(PG_FINISH_RUNS, {"ids": [r[0] for r in run_ids]})
        self.conn.commit()
        c.db_statements += 3
        c.commits += 2
        c.claimed += len(rows)
        return len(rows)


class SQLiteRawWorker(RawWorker):
    def __init__(self, worker_id: str, batch: int, path: str) -> None:
        super().__init__(worker_id, batch)
        self.conn = sqlite3.connect(path, timeout=30.0, isolation_level=None)
        for pragma in ("busy_timeout = 30000", "journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON"):
            self.conn.execute(f"PRAGMA {pragma}")
        delta = next_year() - datetime(1970, 1, 1, tzinfo=UTC)
        self.next_fire = (delta.days * 86_400 + delta.seconds) * 1_000_000

    def claim_batch(self) -> int:
        c = self.counters
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        rows = conn.execute(SQLITE_CLAIM, (c.worker_id, self.batch)).fetchall()
        c.claim_calls += 1
        c.db_statements += 2
        if not rows:
            conn.execute("COMMIT")
            c.commits += 1
            return 0
        run_ids = [
            conn.execute(SQLITE_INSERT_RUN, (sid, due, seq, c.worker_id, started)).fetchone()[0]
            for sid, due, seq, started in rows
        ]
        conn.execute("COMMIT")
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(SQLITE_RELEASE, [(self.next_fire, sid, seq) for sid, _due, seq, _started in rows])
        marks = ",".join("?" * len(run_ids))
        conn.execute(
            f"UPDATE tickwork_runs SET status = 'succeeded', finished_at = {SQLITE_NOW} WHERE id IN ({marks})",
            run_ids,
        )
        conn.execute("COMMIT")
        c.db_statements += 2 * len(rows) + 4
        c.commits += 2
        c.claimed += len(rows)
        return len(rows)


def run_raw_cell(index: int, cell: Cell, scratch: Scratch, settings: Settings, progress: Progress) -> CellResult:
    """Measure the bare-driver ceiling for a burst with ``cell.nodes`` worker processes."""
    result = CellResult(cell)
    scratch.prepare(index)
    scratch.seed(cell.schedules, cell.stored, due_set_for(cell))
    target = scratch.store_options()
    children = start_children(
        cell,
        index,
        settings,
        lambda k: (
            f"raw{k + 1}",
            "tickwork_bench.raw",
            [
                "--dialect",
                scratch.plugin,
                "--target",
                target.get("url") or target["path"],
                "--worker-id",
                f"raw-{k + 1}",
                "--batch",
                str(settings.batch_size),
            ],
        ),
    )
    armed: Armed | None = None
    shares: dict[str, float | None] = {}
    try:
        for child in children:
            child.wait_event("ready", settings.ready_timeout)
        cpu = CpuMeter([c.proc.pid for c in children], scratch.database_name())
        armed = scratch.arm(settings.lead, align=False, fresh_stats=settings.fresh_stats)
        error = wait_burst(scratch, cell, armed, settings, progress)
        if error:
            result.errors.append(error)
        shares = cpu.stop()
    except ChildError as exc:
        result.errors.append(str(exc))
    finally:
        stop_children(children, result, settings)
    if armed is not None:
        metrics = burst_metrics(cell, armed.t0, scratch.run_rows(armed.t0), scratch.duplicates())
        fires = metrics["fires"]
        statements = sum(w.get("db_statements", 0) for w in result.nodes)
        commits = sum(w.get("commits", 0) for w in result.nodes)
        cpu_total = sum(w.get("cpu_seconds", 0.0) for w in result.nodes)
        metrics.update(
            {
                "statements_per_fire": statements / fires if fires else None,
                "round_trips_per_fire": statements / fires if fires else None,
                "commits_per_fire": commits / fires if fires else None,
                "cpu_s_per_1k_fires": cpu_total * 1000.0 / fires if fires else None,
                "node_rss_max_mb": max((w.get("maxrss_mb", 0.0) for w in result.nodes), default=None),
                "t0": armed.t0.isoformat(),
            }
        )
        add_cpu_shares(metrics, shares)
        result.metrics = metrics
    return result


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tickwork_bench.raw", description="a bare-driver claim worker")
    p.add_argument("--dialect", choices=("postgres", "sqlite"), required=True)
    p.add_argument("--target", required=True, help="postgresql:// URL or SQLite file")
    p.add_argument("--worker-id", required=True)
    p.add_argument("--batch", type=int, default=100)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    worker: RawWorker
    if args.dialect == "postgres":
        worker = PostgresRawWorker(args.worker_id, args.batch, args.target)
    else:
        worker = SQLiteRawWorker(args.worker_id, args.batch, args.target)

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        worker.stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    _emit({"event": "ready", "worker_id": args.worker_id})
    counters = worker.run()
    _emit({"event": "result", **asdict(counters)})
    return 0


def _emit(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(main())
