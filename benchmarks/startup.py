"""Start-up of ``tickwork run`` with N jobs declared in code: how long from the launch of the
process until the node logs its start and until it fires.

The generated module declares N jobs that never fire while measured (``0 0 1 1 *``) and one
``tick`` job firing every second, which appends the wall time it ran at and the fire time it ran
for to a file. Each trial launches ``tickwork run --for S`` twice against one scratch store:

- **empty**: the store has its schema and no schedule, so the sync creates all N + 1. The schema
  is made by ``tickwork db upgrade`` first, timed on its own (the command, launch to exit); with
  ``--node-creates-schema`` (SQLite) no upgrade runs and the node creates the schema in the new
  file at its start, as a first SQLite deployment does. ``tick``'s first fire is the first
  whole second after the sync, so "first fire" includes up to a second of waiting for it;
  "ready" (the ``node ... starting`` line) does not.
- **restart**: the store already holds them, unchanged, and ``tick`` is overdue (its stored next
  fire passed while no node ran), so its first fire is taken in the node's first pass: "first
  fire" is the time until the node fires.

Times are wall-clock seconds from just before the launch: the interpreter, the imports, the
module's import (its declarations), the sync, the node's start; "process CPU" is the user + system
time of the whole process (the database server's work is not in it). ``--profile DIR`` runs the nodes
under cProfile (one ``.prof`` per start; read with ``python -m pstats``): the figures then
include the profiler's own cost.

    python benchmarks/startup.py --jobs 20000
    python benchmarks/startup.py --jobs 20000 --store postgres
    python benchmarks/startup.py --jobs 20000 --store mysql --trials 3
    # before/after in one run: a copy of another tree first on the path
    PYTHONPATH=/tmp/base/src:/tmp/base/plugins python benchmarks/startup.py --jobs 20000

Measure alone: every figure is a timing on a shared machine; the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from scratchdbs import drop_database, scratch_database

HEADER = '''"""{n} declared jobs that do not fire while measured, and one that fires every second."""

import time

import tickwork

MARK = {mark!r}


@tickwork.every("1s")
def tick(context: tickwork.RunContext) -> None:
    with open(MARK, "a", encoding="utf-8") as out:
        out.write(f"{{time.time()}} {{context.scheduled_for.timestamp()}}\\n")

'''

JOB = """
@tickwork.cron("0 0 1 1 *")
def job_{i:06d}() -> None:
    pass
"""


def write_module(path: Path, jobs: int, mark: Path) -> None:
    parts = [HEADER.format(n=jobs, mark=str(mark))]
    parts.extend(JOB.format(i=i) for i in range(jobs))
    path.write_text("".join(parts), encoding="utf-8")


def log_time(line: str) -> float:
    """The wall time of a text-format log line (``%(asctime)s``: local time, milliseconds)."""
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def start_once(
    args: argparse.Namespace, scratch: Path, config: Path, mark: Path, label: str, env: dict[str, str]
) -> dict[str, Any]:
    """Launch one node, wait for it to stop; the times of its start."""
    mark.unlink(missing_ok=True)
    log = scratch / f"{label}.log"
    command = [sys.executable]
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
        command += ["-m", "cProfile", "-o", str(args.profile / f"{args.store}-{label}.prof")]
    command += ["-m", "tickwork", "--config", str(config), "run", "--for", str(args.run_for)]
    with log.open("w", encoding="utf-8") as err:
        cpu = children_cpu()
        launched = time.time()
        code = subprocess.run(command, cwd=scratch, env=env, stdout=subprocess.DEVNULL, stderr=err).returncode
        cpu = children_cpu() - cpu
    text = log.read_text(encoding="utf-8")
    if code != 0:
        raise SystemExit(f"the node failed (exit {code}):\n{text[-3000:]}")
    ready = next((log_time(line) - launched for line in text.splitlines() if " starting: config " in line), None)
    synced = next((line.split(": ", 1)[1] for line in text.splitlines() if "tickwork.schedules: synced" in line), "")
    fires = [tuple(map(float, line.split())) for line in mark.read_text(encoding="utf-8").splitlines()]
    first = min(fires, key=lambda f: f[0]) if fires else None
    return {
        "ready_s": ready,
        "first_fire_s": None if first is None else first[0] - launched,
        "first_fire_due_s": None if first is None else first[1] - launched,
        "synced": synced,
        "cpu_s": cpu,
    }


def children_cpu() -> float:
    """User + system CPU seconds of the child processes waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def trial(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="tw-start-") as tmp:
        scratch = Path(tmp)
        mark = scratch / "fires.txt"
        module = f"startjobs_{args.jobs}"
        write_module(scratch / f"{module}.py", args.jobs, mark)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(scratch), os.environ.get("PYTHONPATH")]))}
        # A deployed node loads its modules from .pyc files: with PYTHONDONTWRITEBYTECODE set
        # (as on the machine these figures come from) every start would compile the generated
        # module and tickwork's own from source, about 2 s of CPU that no deployment pays.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        # The .pyc is written once, untimed: a deployed module is imported from its .pyc.
        subprocess.run([sys.executable, "-c", f"import {module}"], cwd=scratch, env=env, check=True)
        database = None
        admin_url = args.pg_url if args.store == "postgres" else args.mysql_url
        if args.store == "sqlite":
            store = f'path = "{scratch / "start.db"}"'
        else:
            url, database = scratch_database(args.store, admin_url, "tw_start")
            store = f'plugin = "{args.store}"\nurl = "{url}"'
        config = scratch / "node.toml"
        config.write_text(f'[scheduler]\nnode_id = "start-1"\njobs = ["{module}"]\n\n[store]\n{store}\n', "utf-8")
        try:
            upgrade = upgrade_cpu = None
            if not args.node_creates_schema:
                cpu = children_cpu()
                launched = time.time()
                subprocess.run(
                    [sys.executable, "-m", "tickwork", "--config", str(config), "db", "upgrade"],
                    cwd=scratch,
                    env=env,
                    check=True,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                upgrade = time.time() - launched
                upgrade_cpu = children_cpu() - cpu
            empty = start_once(args, scratch, config, mark, "empty", env)
            time.sleep(args.pause)  # tick's stored next fire passes: overdue at the restart
            restart = start_once(args, scratch, config, mark, "restart", env)
        finally:
            if database is not None:
                drop_database(args.store, admin_url, database)
    return {"empty": empty, "restart": restart, "upgrade": {"upgrade_s": upgrade, "cpu_s": upgrade_cpu}}


def fmt(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return "-"
    if len(known) == 1:
        return f"{known[0]:.2f}"
    return f"{statistics.median(known):.2f} [{min(known):.2f}-{max(known):.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000, help="declared jobs besides tick (default 20,000)")
    parser.add_argument("--store", choices=["sqlite", "postgres", "mysql"], default="sqlite")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--mysql-url", default="mysql://root@127.0.0.1:3306/mysql")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--run-for", type=float, default=2.0, help="seconds each node runs (--for)")
    parser.add_argument("--pause", type=float, default=1.5, help="seconds between the two starts")
    parser.add_argument("--profile", type=Path, help="cProfile each start into DIR")
    parser.add_argument(
        "--node-creates-schema",
        action="store_true",
        help="SQLite: no `db upgrade` first; the empty start's node creates the schema in the new file",
    )
    args = parser.parse_args()
    if args.node_creates_schema and args.store != "sqlite":
        parser.error("--node-creates-schema: only a SQLite store creates its schema at a node's start")
    print(f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    results = [trial(args) for _ in range(args.trials)]
    print(f"load average after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    print(f"{args.jobs} declared jobs + tick, {args.store}, {args.trials} trial(s): median [range], s from launch")
    print("start | node starting line | first fire | first fire due at | sync (last trial) | process CPU s")
    upgrades = [r["upgrade"] for r in results]
    print(
        f"db upgrade | {fmt([u['upgrade_s'] for u in upgrades])} (the command, launch to exit) | - | - | - "
        f"| {fmt([u['cpu_s'] for u in upgrades])}"
    )
    for label in ("empty", "restart"):
        rows = [r[label] for r in results]
        print(
            f"{label} | {fmt([r['ready_s'] for r in rows])} | {fmt([r['first_fire_s'] for r in rows])} "
            f"| {fmt([r['first_fire_due_s'] for r in rows])} | {rows[-1]['synced']} | {fmt([r['cpu_s'] for r in rows])}"
        )


if __name__ == "__main__":
    main()
