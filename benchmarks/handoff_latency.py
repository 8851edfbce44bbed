"""Fire-to-task latency of the hand-off executors: one node on PostgreSQL hands N every-second
schedules to real workers for T seconds; the tasks log when they start (tests/support/handoff/jobs.py).

    python benchmarks/handoff_latency.py --executor celery --broker amqp://guest:guest@127.0.0.1:5672//
    python benchmarks/handoff_latency.py --executor rq --broker redis://127.0.0.1:6379/0
    python benchmarks/handoff_latency.py --executor dramatiq --broker redis://127.0.0.1:6379/0

Prints how many fires were expected, handed off, skipped (previous hand-off not final) and run,
and the latency from the scheduled time to the task's start (p50, p95, max): the engine's claim,
the publish and its confirmation, the broker, the worker's pick-up and its ``started`` report.
Uses the test suite's queue applications (tests/support/handoff/) and a throwaway database on the
PostgreSQL at ``--pg`` (dropped at the end).
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.handoff import harness

from tickwork.structures import RunStatus
from tickwork_postgres.store import PostgresStore

#: Seconds of fires left out of the latency (the node starting).
WARM_UP = 6.0

TARGETS = {
    "celery": ("handoff.work", {"app": "tests.support.handoff.celery_app:app"}),
    "rq": ("tests.support.handoff.rq_jobs.work", {}),
    "dramatiq": ("tests.support.handoff.dramatiq_app:work", {"broker": "tests.support.handoff.dramatiq_app:broker"}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--executor", choices=sorted(TARGETS), required=True)
    parser.add_argument("--broker", required=True, help="amqp://... or redis://...")
    parser.add_argument("--schedules", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--pg", default="host=127.0.0.1 user=postgres dbname=postgres")
    args = parser.parse_args()

    dbname = f"tickwork_bench_handoff_{os.getpid()}"
    with psycopg.connect(args.pg, autocommit=True) as admin_conn:
        admin_conn.execute(f"CREATE DATABASE {dbname}")
    try:
        with tempfile.TemporaryDirectory() as scratch:
            report(Path(scratch), dbname, args)
    finally:
        with psycopg.connect(args.pg, autocommit=True) as admin_conn:
            admin_conn.execute(f"DROP DATABASE {dbname} WITH (FORCE)")


def report(tmp: Path, dbname: str, args: argparse.Namespace) -> None:
    info = psycopg.conninfo.conninfo_to_dict(args.pg)
    url = f"postgresql+psycopg://{info.get('user', 'postgres')}@{info.get('host', '127.0.0.1')}/{dbname}"
    target, table = TARGETS[args.executor]
    queue = harness.queue_name()
    table = {**table, "queue": queue, **({"url": args.broker} if args.executor == "rq" else {})}
    config = harness.write_config(tmp / "n1.toml", {"plugin": "postgres", "url": url}, "n1", args.executor, table)
    log = tmp / "executions.jsonl"
    env = harness.env_for(config, log, HANDOFF_BROKER=args.broker, HANDOFF_QUEUE=queue)
    store = PostgresStore(url)
    store.upgrade()
    store.open()
    with harness.admin(config) as admin:
        for i in range(args.schedules):
            admin.add(f"s{i:03d}", "* * * * * *", target, executor=args.executor, args={"n": i})
    if args.executor == "celery":
        workers = [harness.celery_worker(queue, env, tmp / "worker.log")]
    elif args.executor == "rq":
        workers = [
            harness.rq_worker(args.broker, queue, env, tmp / f"rq{i}.log", f"rq{i}", "SimpleWorker") for i in (1, 2)
        ]
    else:
        workers = [harness.dramatiq_worker(queue, env, tmp / "worker.log")]
    node = harness.start_node(config, args.seconds, env, tmp / "n1.log")
    try:
        node.wait(timeout=args.seconds + 120)
        rows = harness.settled(store)
    finally:
        harness.kill(node)
        for worker in workers:
            harness.stop(worker)
        store.close()
    done = harness.executions(log)
    # Steady state: the node's start-up (its first fires pass while it starts) is left out.
    settle = min(r.scheduled_for for r in rows).timestamp() + WARM_UP
    latencies = sorted(
        e["at"] - at for e in done if (at := datetime.fromisoformat(e["scheduled_for"]).timestamp()) >= settle
    )
    counts = {s: sum(1 for r in rows if r.status is s) for s in RunStatus}
    print(
        f"executor {args.executor}, broker {args.broker.split('@')[-1]}, {args.schedules} schedules, {args.seconds:g} s"
    )
    print(f"history: {len(rows)} fires; " + ", ".join(f"{s.value} {n}" for s, n in counts.items() if n))
    print(f"ran (worker log): {len(done)}")
    first = min(r.scheduled_for for r in rows)
    skipped = collections.Counter(
        (int((r.scheduled_for - first).total_seconds()), (r.error or "").split(" (")[0])
        for r in rows
        if r.status is RunStatus.SKIPPED
    )
    for (second, reason), n in sorted(skipped.items()):
        print(f"  skipped at +{second}s: {n} x {reason}")
    if latencies:
        p95 = latencies[max(0, int(0.95 * len(latencies)) - 1)]
        print(
            f"scheduled time -> task start, after the first {WARM_UP:g} s: "
            f"p50 {statistics.median(latencies) * 1000:.0f} ms, "
            f"p95 {p95 * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms"
        )


if __name__ == "__main__":
    main()
