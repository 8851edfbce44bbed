"""CPU cost of firing N every-second Celery tasks: Celery beat against one tickwork node with the
``celery`` executor (PostgreSQL store), the same worker consuming both.

    python benchmarks/handoff_vs_beat.py --schedules 20 --seconds 30

Prints, for each scheduler, the tasks the worker ran and the scheduler process's CPU seconds
(user + system, sampled with psutil until it exits). tickwork does more per fire (a claim and a
history row in the database, the previous-hand-off check, a confirmed publish); beat keeps its
schedule in memory on one process and has no history.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.handoff import harness

from tickwork_postgres.store import PostgresStore


def cpu_until_exit(pid: int, seconds: float) -> float:
    """CPU seconds of ``pid`` and its children, last sampled before it ends (or is stopped)."""
    process, used = psutil.Process(pid), 0.0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            procs = [process, *process.children(recursive=True)]
            used = sum(p.cpu_times().user + p.cpu_times().system for p in procs)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.5)
    return used


def run_beat(tmp: Path, args: argparse.Namespace, queue: str, env: dict[str, str]) -> tuple[int, float]:
    log = tmp / "beat.jsonl"
    entries = "\n".join(
        f'    "b{i}": {{"task": "handoff.beat_work", "schedule": 1.0, "kwargs": {{"n": {i}}}, '
        f'"options": {{"queue": "{queue}"}}}},'
        for i in range(args.schedules)
    )
    (tmp / "beatconf.py").write_text(
        textwrap.dedent("from tests.support.handoff.celery_app import app\n\napp.conf.beat_schedule = {\n")
        + entries
        + "\n}\n"
    )
    env = dict(env, HANDOFF_LOG=str(log), PYTHONPATH=f"{harness.REPO}:{tmp}")
    worker = harness.celery_worker(queue, env, tmp / "beat-worker.log")
    beat = harness.start(
        [str(harness.BIN / "celery"), "-A", "beatconf", "beat", "-s", str(tmp / "beat-schedule"), "--loglevel=WARNING"],
        env,
        tmp / "beat.log",
    )
    try:
        time.sleep(args.seconds)
        cpu = cpu_until_exit(beat.pid, 0.1)
    finally:
        os.killpg(beat.pid, signal.SIGTERM)
        beat.wait(timeout=30)
        time.sleep(2)
        harness.stop(worker)
    return len(harness.executions(log)), cpu


def run_tickwork(tmp: Path, args: argparse.Namespace, queue: str, url: str, broker: str) -> tuple[int, float]:
    config = harness.write_config(
        tmp / "n1.toml", {"plugin": "postgres", "url": url}, "n1", "celery",
        {"app": "tests.support.handoff.celery_app:app", "queue": queue},
    )  # fmt: skip
    log = tmp / "tickwork.jsonl"
    env = harness.env_for(config, log, HANDOFF_BROKER=broker)
    store = PostgresStore(url)
    store.upgrade()
    store.open()
    with harness.admin(config) as admin:
        for i in range(args.schedules):
            admin.add(f"t{i:03d}", "* * * * * *", "handoff.work", executor="celery", args={"n": i})
    worker = harness.celery_worker(queue, env, tmp / "worker.log")
    node = harness.start_node(config, args.seconds, env, tmp / "n1.log")
    try:
        cpu = cpu_until_exit(node.pid, args.seconds + 60)
        node.wait(timeout=60)
        harness.settled(store)
    finally:
        harness.stop(worker)
        store.close()
    return len(harness.executions(log)), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schedules", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--broker", default="amqp://guest:guest@127.0.0.1:5672//")
    parser.add_argument("--pg", default="host=127.0.0.1 user=postgres dbname=postgres")
    args = parser.parse_args()
    dbname = f"tickwork_bench_beat_{os.getpid()}"
    info = psycopg.conninfo.conninfo_to_dict(args.pg)
    url = f"postgresql+psycopg://{info.get('user', 'postgres')}@{info.get('host', '127.0.0.1')}/{dbname}"
    with psycopg.connect(args.pg, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {dbname}")
    try:
        with tempfile.TemporaryDirectory() as scratch:
            tmp = Path(scratch)
            env = dict(os.environ, HANDOFF_BROKER=args.broker, PYTHONPATH=str(harness.REPO))
            beat_ran, beat_cpu = run_beat(tmp, args, harness.queue_name(), env)
            tw_ran, tw_cpu = run_tickwork(tmp, args, harness.queue_name(), url, args.broker)
    finally:
        with psycopg.connect(args.pg, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {dbname} WITH (FORCE)")
    print(f"{args.schedules} every-second tasks for {args.seconds:g} s, one Celery worker")
    print(f"celery beat:             {beat_ran} tasks run, scheduler CPU {beat_cpu:.1f} s")
    print(f"tickwork node (celery):  {tw_ran} tasks run, scheduler CPU {tw_cpu:.1f} s")


if __name__ == "__main__":
    main()
