"""Backfill speed: how long real ``tickwork run`` nodes take to run a queued backfill of a no-op job.

Per trial: a fresh store (SQLite file, or a scratch PostgreSQL database), ``--schedules``
minutely schedules of a no-op job, a backfill of ``--fires`` fire times in all (split evenly
between the schedules, each range ending a minute before now) queued with the admin API
(``Admin.backfill``, ``--overlap``), then ``--nodes`` node processes launched together; the
trial ends when the history holds a finished run of every backfilled fire. It prints, per trial:
seconds from the launch of the nodes to the last backfilled run's end (the figure of issue #42:
"within N s of the node's start", Python start-up included), seconds from the first backfilled
run's start to the last one's end (database clock), fires per second over that span, and checks
(fires run, fire times recorded twice, statuses, runs by node). Then the median over trials.

    python benchmarks/backfill_speed.py --fires 2000                       # SQLite, 1 node, buffer_all
    python benchmarks/backfill_speed.py --fires 2000 --overlap allow
    python benchmarks/backfill_speed.py --store postgres --nodes 3 --fires 10000 --schedules 30

Measure alone: two shared cores and anything else running move every figure.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, func, select

import tickwork
from scratchdbs import drop_database, scratch_database
from tickwork.sql.schema import runs

JOBS = '''
"""The backfill benchmark's job: nothing, so what is measured is the scheduler's pace."""


def noop() -> None:
    pass
'''


def config_text(store: str, node: int, nodes: int) -> str:
    membership = '[membership]\nplugin = "hashring"\n' if nodes > 1 else ""
    return f'[scheduler]\nnode_id = "bf-{node}"\n\n[store]\n{store}\n\n{membership}'


def finished(engine: Any, start: datetime) -> int:
    """Backfilled runs that ended (fire times before ``start`` are the backfill's)."""
    with engine.connect() as conn:
        return int(
            conn.scalar(
                select(func.count()).select_from(runs).where(runs.c.scheduled_for < start, runs.c.status != "running")
            )
            or 0
        )


def run_one(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tw-backfill-") as tmp:
        scratch = Path(tmp)
        (scratch / "bfjobs.py").write_text(JOBS, encoding="utf-8")
        sys.path.insert(0, str(scratch))  # the admin API checks the target as it adds the schedules
        if args.store == "postgres":
            url, database = scratch_database("postgres", args.pg_url, "tw_backfill")
            store = f'plugin = "postgres"\nurl = "{url}"'
            sa_url = url.replace("postgresql://", "postgresql+psycopg://", 1)
        else:
            url = database = ""
            store = f'path = "{scratch / "bf.db"}"'
            sa_url = f"sqlite:///{scratch / 'bf.db'}"
        configs = []
        for node in range(args.nodes):
            path = scratch / f"node{node}.toml"
            path.write_text(config_text(store, node, args.nodes), encoding="utf-8")
            configs.append(path)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(scratch), os.environ.get("PYTHONPATH", "")])}
        subprocess.run(
            [sys.executable, "-m", "tickwork", "--config", str(configs[0]), "db", "upgrade"],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        admin = tickwork.connect(configs[0])
        names = [f"bf-{i:03d}" for i in range(args.schedules)]
        admin.add_many(
            [{"name": n, "expression": "* * * * *", "target": "bfjobs:noop"} for n in names], check_nodes=False
        )
        # Every backfilled fire time is before `start`: the schedules' own fires come after it.
        start = admin.store().now().replace(second=0, microsecond=0) - timedelta(minutes=1)
        per = args.fires // args.schedules
        for name in names:
            report = admin.backfill(name, start - timedelta(minutes=per), start, overlap=args.overlap)
            assert len(report.queued) == per, report
        expected = per * len(names)
        admin.close()
        logs = [scratch / f"node{node}.log" for node in range(args.nodes)]
        db = create_engine(sa_url)
        launched = time.monotonic()
        nodes = []
        for config, log in zip(configs, logs, strict=True):
            with log.open("w", encoding="utf-8") as err:
                nodes.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "tickwork", "--config", str(config), "run", "--for", str(args.timeout)],
                        cwd=scratch,
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                    )
                )
        done = 0
        while time.monotonic() - launched < args.timeout:
            done = finished(db, start)
            if done >= expected:
                break
            time.sleep(0.1)
        wall = time.monotonic() - launched
        for p in nodes:
            p.terminate()
        for p, log in zip(nodes, logs, strict=True):
            if p.wait(timeout=120) != 0:
                raise SystemExit(f"a node failed (exit {p.returncode}):\n{log.read_text(encoding='utf-8')[-3000:]}")
        with db.connect() as conn:
            rows = conn.execute(
                select(runs.c.schedule_id, runs.c.scheduled_for, runs.c.status, runs.c.node, runs.c.started_at)
                .add_columns(runs.c.finished_at)
                .where(runs.c.scheduled_for < start)
            ).all()
        db.dispose()
        sys.path.remove(str(scratch))
        if database:
            drop_database("postgres", args.pg_url, database)
    fires = collections.Counter((r.schedule_id, r.scheduled_for) for r in rows)
    starts = [r.started_at for r in rows if r.started_at is not None]
    ends = [r.finished_at for r in rows if r.finished_at is not None]
    span = (max(ends) - min(starts)).total_seconds() if starts and ends else float("nan")
    return {
        "expected": expected,
        "fires": len(fires),
        "twice": sum(1 for n in fires.values() if n > 1),
        "statuses": dict(collections.Counter(r.status for r in rows)),
        "by_node": dict(collections.Counter(r.node for r in rows)),
        "complete": done >= expected,
        "launch_to_last_s": wall,
        "first_to_last_s": span,
        "per_s": len(fires) / span if span > 0 else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fires", type=int, default=2000, help="backfilled fire times in all")
    parser.add_argument("--schedules", type=int, default=1, help="schedules the fires are split between")
    parser.add_argument("--overlap", choices=["buffer_all", "allow"], default="buffer_all")
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--nodes", type=int, default=1, help="nodes (hashring when more than one; not for sqlite)")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a trial may take at most")
    args = parser.parse_args()
    if args.store == "sqlite" and args.nodes != 1:
        parser.error("--nodes > 1 needs --store postgres")
    print(
        f"{args.fires} backfilled fires of a no-op job on {args.schedules} schedule(s), overlap {args.overlap}, "
        f"{args.nodes} {args.store} node(s); load average before: {os.getloadavg()[0]:.2f}"
    )
    results = []
    for trial in range(args.trials):
        load = os.getloadavg()[0]
        r = run_one(args)
        results.append(r)
        print(
            f"trial {trial + 1} (load {load:.1f}): launch->last end {r['launch_to_last_s']:.1f} s | "
            f"first start->last end {r['first_to_last_s']:.1f} s | {r['per_s']:.0f} fires/s | "
            f"fires {r['fires']}/{r['expected']} complete={r['complete']} twice={r['twice']} "
            f"statuses={r['statuses']} by node={r['by_node']}",
            flush=True,
        )
    for key in ("launch_to_last_s", "first_to_last_s", "per_s"):
        print(f"median {key}: {statistics.median(r[key] for r in results):.1f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
