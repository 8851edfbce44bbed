"""The processes of a hand-off run besides the tickwork nodes, started as users start them: the
queue's workers (``celery ... worker``, ``rq worker``, ``dramatiq``) and Celery beat; the queues
they use, made unique per run and deleted at the end."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .procs import ChildError

#: Worker concurrency when --worker-concurrency is not given: celery threads, rq worker
#: processes, dramatiq threads.
DEFAULT_CONCURRENCY = {"celery": 16, "rq": 4, "dramatiq": 8}
#: The workers' log line that says they consume.
READY_TEXT = {"celery": "ready.", "rq": "Listening on", "dramatiq": "is ready for action"}


def queue_name(role: str) -> str:
    """A queue of this run's own, on a broker other runs (and tests) may share."""
    return f"tickwork-bench-{role}-{uuid.uuid4().hex[:10]}"


class Service:
    """A process in a session of its own (a worker's pool children are stopped with it), its
    output in ``log``."""

    def __init__(self, name: str, argv: Sequence[str], env: dict[str, str], log: Path) -> None:
        self.name = name
        self.log = log
        with log.open("ab") as sink:
            self.proc = subprocess.Popen(
                list(argv), env=env, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip

    def tail(self, chars: int = 2000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def wait_for(self, text: str, timeout: float, count: int = 1) -> None:
        """Return once ``text`` appeared ``count`` times in the log; :class:`ChildError` if the
        process exits first or the time runs out."""
        deadline = time.monotonic() + timeout
        while self.tail(10**9).count(text) < count:
            if self.proc.poll() is not None:
                raise ChildError(f"{self.name} exited with status {self.proc.returncode}\n{self.tail()}")
            if time.monotonic() > deadline:
                raise ChildError(f"{self.name}: no {text!r} within {timeout:g}s\n{self.tail()}")
            time.sleep(0.1)

    def terminate(self) -> None:
        """SIGTERM, without waiting (:meth:`stop` waits)."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (a warm shutdown), SIGKILL after ``timeout`` seconds."""
        if self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


def worker_argv(executor: str, broker: str, queue: str, name: str, concurrency: int) -> list[str]:
    """The command line of one worker of ``executor`` consuming ``queue``."""
    if executor == "celery":
        return [
            sys.executable, "-m", "celery", "-A", "tickwork_bench.handoffapp", "worker", "-Q", queue,
            "-P", "threads", "-c", str(concurrency), "-n", f"{name}-{queue}@%h",
            "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=INFO",
        ]  # fmt: skip
    if executor == "rq":
        # SimpleWorker runs the job in the worker process (no fork per job, as the default
        # Worker does); concurrency is the number of worker processes.
        return [
            sys.executable, "-m", "rq.cli", "worker", "-u", broker, "-w", "tickwork_rq.worker.SimpleWorker",
            "-j", "tickwork_rq.worker.Job", "-n", f"{name}-{queue}", queue,
        ]  # fmt: skip
    return [
        sys.executable, "-m", "dramatiq", "tickwork_bench.handoffdramatiq", "--processes", "1",
        "--threads", str(concurrency), "--queues", queue,
    ]  # fmt: skip


def start_workers(
    executor: str, broker: str, queue: str, concurrency: int, env: dict[str, str], work_dir: Path, role: str
) -> list[Service]:
    """The workers of one queue, ready to consume."""
    count = concurrency if executor == "rq" else 1
    workers = [
        Service(f"{role} worker {i + 1}", worker_argv(executor, broker, queue, f"{role}{i + 1}", concurrency), env,
                work_dir / f"{role}-worker{i + 1}.log")
        for i in range(count)
    ]  # fmt: skip
    for worker in workers:
        worker.wait_for(READY_TEXT[executor], 120)
    return workers


def beat_argv(schedule_file: Path) -> list[str]:
    return [
        sys.executable, "-m", "celery", "-A", "tickwork_bench.beatapp", "beat",
        "-S", "tickwork_bench.beatapp:MarkedScheduler", "-s", str(schedule_file), "--loglevel=WARNING",
    ]  # fmt: skip


def ready_time(path: Path) -> float | None:
    """When a beat said its schedule was set up (epoch seconds), ``None`` until it did."""
    try:
        return float(json.loads(path.read_text())["at"])
    except (OSError, ValueError, KeyError):
        return None


def delete_queues(executor: str, broker: str, queues: Sequence[str]) -> list[str]:
    """Delete the run's queues on the broker (they are declared durable by the workers); returns
    one line per queue that could not be deleted."""
    problems: list[str] = []
    if executor == "rq":
        from redis import Redis
        from rq import Queue

        connection = Redis.from_url(broker)
        for name in queues:
            try:
                Queue(name, connection=connection).delete(delete_jobs=True)
                # The jobs that ran are no longer in the queue but in its registries (finished,
                # failed, ...): their keys and the registries' go too.
                for key in connection.scan_iter(f"rq:*:{name}"):
                    if connection.type(key) == b"zset":
                        for job in connection.zrange(key, 0, -1):
                            job_id = (job.decode() if isinstance(job, bytes) else str(job)).split(":", 1)[0]
                            connection.delete(f"rq:job:{job_id}", f"rq:results:{job_id}")
                    connection.delete(key)
                # The stopped workers' records (named after the queue, see worker_argv).
                for key in connection.scan_iter(f"rq:worker:*-{name}"):
                    connection.srem("rq:workers", key)
                    connection.delete(key)
            except Exception as exc:
                problems.append(f"queue {name}: {exc}")
        connection.close()
        return problems
    from kombu.connection import Connection

    names = [n for q in queues for n in ((q, f"{q}.DQ", f"{q}.XQ") if executor == "dramatiq" else (q,))]
    with Connection(broker, connect_timeout=5) as conn:  # type: ignore[no-untyped-call]
        channel: Any = conn.channel()
        for name in names:
            try:
                channel.queue_delete(name)
            except Exception as exc:
                problems.append(f"queue {name}: {exc}")
                channel = conn.channel()  # an AMQP error closes the channel
    if broker.startswith("redis"):
        from redis import Redis

        connection = Redis.from_url(broker)
        for q in queues:
            # Dramatiq's keys of the queue; kombu's bindings of its exchange (named as the queue).
            patterns = (f"dramatiq:{q}*",) if executor == "dramatiq" else (f"_kombu.binding*.{q}",)
            keys = [k for pattern in patterns for k in connection.scan_iter(pattern)]
            if keys:
                connection.delete(*keys)
        connection.close()
    return problems
