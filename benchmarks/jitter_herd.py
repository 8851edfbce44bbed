"""A herd: many schedules due at the same instant (``* * * * *``: every minute, all at :00), fired
by real ``tickwork run`` nodes, with and without ``jitter``.

Without jitter the whole herd is one burst: every fire is due at once and waits its turn, so the
last starts as late as the burst takes to drain. With ``jitter = J`` each schedule fires at its own
fixed offset in ``[0, J)`` after the minute (derived from its name), so the same fires arrive
spread over ``J`` seconds and each starts close to its own (jittered) time. For each jitter this
reports, from the history of one minute's fires: how many were recorded, with which status and
on which node (and whether any twice), the spread
of their fire times, their start lag behind their own fire time (p50/p99/max), and the most
starts in any 100 ms.

    python benchmarks/jitter_herd.py --schedules 10000 --jitter 0,10
    python benchmarks/jitter_herd.py --store postgres --pg-url postgresql://postgres@127.0.0.1/postgres --nodes 2

Measure alone: the lag is a timing, and two cores shared with anything else move it.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import tickwork

JOBS = '''
"""The herd's job: nothing, so the lag measured is the scheduler's."""


def noop() -> None:
    pass
'''


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def fresh_postgres(url: str) -> str:
    """An empty database on the server of ``url``; its URL."""
    import psycopg

    name = f"tw_herd_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + "/" + name


def drop_postgres(url: str) -> None:
    """Drop the scratch database of :func:`fresh_postgres`."""
    import psycopg

    server, name = url.rsplit("/", 1)
    with psycopg.connect(server + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def config_text(args: argparse.Namespace, scratch: Path, store_url: str | None, node: int) -> str:
    store = f'path = "{scratch / "herd.db"}"' if store_url is None else f'plugin = "postgres"\nurl = "{store_url}"'
    membership = '[membership]\nplugin = "hashring"\n' if args.nodes > 1 else ""
    return (
        textwrap.dedent(
            f"""
        [scheduler]
        node_id = "herd-{node}"
        """
        )
        + f"\n[store]\n{store}\n\n{membership}"
    )


def add_herd(admin: tickwork.Admin, count: int, jitter: float) -> datetime:
    """Add the herd; return the minute it is first due at."""
    options: dict[str, Any] = {"jitter": f"{jitter:g}s"} if jitter else {}
    specs = [
        {"name": f"herd-{i:06d}", "expression": "* * * * *", "target": "herdjobs:noop", **options} for i in range(count)
    ]
    admin.add_many(specs, check_nodes=False)
    return database_now(admin).replace(second=0, microsecond=0) + timedelta(minutes=1)


def database_now(admin: tickwork.Admin) -> datetime:
    """The database clock (what decides what is due)."""
    return admin.store().now()


def run_one(args: argparse.Namespace, jitter: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tw-herd-") as tmp:
        scratch = Path(tempfile.mkdtemp(prefix="tw-herd-kept-")) if args.keep else Path(tmp)
        (scratch / "herdjobs.py").write_text(JOBS, encoding="utf-8")
        sys.path.insert(0, str(scratch))
        store_url = fresh_postgres(args.pg_url) if args.store == "postgres" else None
        configs = []
        for node in range(args.nodes):
            path = scratch / f"node{node}.toml"
            path.write_text(config_text(args, scratch, store_url, node), encoding="utf-8")
            configs.append(path)
        subprocess.run(
            [sys.executable, "-m", "tickwork", "--config", str(configs[0]), "db", "upgrade"],
            check=True,
        )
        admin = tickwork.connect(configs[0])
        # The herd must be in the store, and the nodes up, well before the minute it is due at.
        while 60 - database_now(admin).second < 20:
            time.sleep(0.5)
        minute = add_herd(admin, args.schedules, jitter)
        seconds = (minute - database_now(admin)).total_seconds() + jitter + args.drain
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(scratch), os.environ.get("PYTHONPATH", "")])}
        # Each node logs a line per run end: to a file, never a pipe read only at the end (a full
        # pipe blocks the node's next log line, and with it its loop).
        logs = [scratch / f"node{node}.log" for node in range(args.nodes)]
        nodes = []
        for config, log in zip(configs, logs, strict=True):
            with log.open("w", encoding="utf-8") as err:
                nodes.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "tickwork", "--config", str(config), "run", "--for", f"{seconds:.1f}"],
                        cwd=scratch,
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                    )
                )
        for p, log in zip(nodes, logs, strict=True):
            if p.wait(timeout=seconds + 120) != 0:
                raise SystemExit(f"a node failed (exit {p.returncode}):\n{log.read_text(encoding='utf-8')[-3000:]}")
        if args.keep:
            print(f"kept {scratch} (node logs, configs){'' if store_url is None else ' and ' + store_url}")
        runs = [
            r
            for r in admin.history(since=minute, until=minute + timedelta(minutes=1), limit=10 * args.schedules)
            if r.schedule.startswith("herd-")
        ]
        admin.close()
        sys.path.remove(str(scratch))
        if store_url is not None and not args.keep:
            drop_postgres(store_url)
    if args.dump is not None:
        with open(f"{args.dump}-{jitter:g}s.csv", "w", encoding="utf-8") as out:
            out.write("schedule,offset_s,lag_ms,node\n")
            for r in runs:
                if r.started_at is not None:
                    offset = (r.scheduled_for - minute).total_seconds()
                    lag = (r.started_at - r.scheduled_for).total_seconds() * 1000
                    out.write(f"{r.schedule},{offset:.6f},{lag:.3f},{r.node}\n")
    return summarize(runs, args.schedules, minute, jitter)


def summarize(runs: list[Any], expected: int, minute: datetime, jitter: float) -> dict[str, Any]:
    fires = collections.Counter((r.schedule, r.scheduled_for) for r in runs)
    started = [r for r in runs if r.started_at is not None]
    lags = [(r.started_at - r.scheduled_for).total_seconds() * 1000 for r in started]
    offsets = [(r.scheduled_for - minute).total_seconds() for r in runs]
    windows = collections.Counter(int(r.started_at.timestamp() * 10) for r in started)
    return {
        "jitter_s": jitter,
        "expected": expected,
        "fires": len(fires),
        "statuses": dict(collections.Counter(r.status.value for r in runs)),
        "by_node": dict(collections.Counter(r.node for r in started)),
        "twice": sum(1 for n in fires.values() if n > 1),
        "early": sum(1 for lag in lags if lag < 0),
        "fire_offsets_s": (min(offsets), max(offsets)) if offsets else None,
        "lag_ms": ((statistics.median(lags), percentile(lags, 0.99), max(lags)) if lags else None),
        "peak_starts_per_100ms": max(windows.values()) if windows else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--jitter", default="0,10", help="comma-separated seconds (default 0,10)")
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--nodes", type=int, default=1, help="nodes (hashring when more than one; not for sqlite)")
    parser.add_argument("--drain", type=float, default=15.0, help="seconds the nodes run past the last fire")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory, node logs and database")
    parser.add_argument("--dump", metavar="PREFIX", help="write each run's fire offset and lag to PREFIX-Js.csv")
    args = parser.parse_args()
    if args.store == "sqlite" and args.nodes != 1:
        parser.error("--nodes > 1 needs --store postgres")
    print(f"{args.schedules} schedules '* * * * *' on {args.nodes} {args.store} node(s), {datetime.now(UTC):%H:%M}")
    print(
        "jitter | fires recorded / expected | twice | early | fire offsets s | start lag p50/p99/max ms "
        "| peak starts per 100 ms | statuses | runs by node"
    )
    for jitter in (float(j) for j in args.jitter.split(",")):
        r = run_one(args, jitter)
        offsets = "-" if r["fire_offsets_s"] is None else "{:.2f}-{:.2f}".format(*r["fire_offsets_s"])
        lag = "-" if r["lag_ms"] is None else "{:.0f}/{:.0f}/{:.0f}".format(*r["lag_ms"])
        print(
            f"{jitter:g} s | {r['fires']} / {r['expected']} | {r['twice']} | {r['early']} | {offsets} | {lag} | "
            f"{r['peak_starts_per_100ms']} | {r['statuses']} | {r['by_node']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
