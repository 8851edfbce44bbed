"""Workers: take queued jobs from the queue table, run them, and record how they ended.

Run one with::

    python -m tickwork_jobqueue.worker --url sqlite:///jobs.db [--once] [--concurrency N]

A job is the ``module:function`` target of the schedule that enqueued it, called with the
schedule's stored arguments (``async def`` functions are run to completion), inside the run
context of the run that enqueued it: ``tickwork.current_run()`` and a parameter annotated
``tickwork.RunContext`` give its schedule, fire time, run id, attempt and node. The module must be
importable by the worker: ``python -m`` puts the current directory on ``sys.path``; set
``PYTHONPATH`` for anything else.

Several workers, on any hosts, may consume one queue: each job is claimed by exactly one of them.
A worker refreshes a heartbeat on the jobs it runs; a running job whose heartbeat is older than
``stale_after`` is failed by the next worker that looks (its worker is presumed dead), which
unblocks the schedule.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import inspect
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from types import FrameType

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from tickwork.errors import ConfigError, ExecutorError
from tickwork.plugin.allowed import allowed_modules as allowed_modules_of
from tickwork.plugin.calls import call_arguments
from tickwork.plugin.runcontext import RunContext, running
from tickwork.plugin.tracebacks import format_exception
from tickwork.structures import MAX_ERROR_CHARS

from . import queries
from .database import create_queue_engine, describe, ensure_table, parse_url
from .queries import QueuedJob
from .schema import JobState
from .targets import resolve

log = logging.getLogger("tickwork.jobqueue.worker")

#: Environment variable read when ``--url`` is not given (keeps a password out of ``ps``).
URL_ENV = "TICKWORK_JOBQUEUE_URL"
#: Environment variable read when ``--allowed-modules`` is not given.
ALLOWED_ENV = "TICKWORK_JOBQUEUE_ALLOWED_MODULES"
#: Attempts at recording a job's end while the database is unreachable.
FINISH_ATTEMPTS = 3


def default_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class Worker:
    """Consumes the queue at ``url``.

    :param url: the queue database, as in ``[executor.jobqueue] url``
    :param name: recorded on the jobs it runs; give a stable one (``--name``) so that a restarted
        worker fails the jobs its previous process left running instead of waiting ``stale_after``
    :param concurrency: jobs run at once, each in its own thread
    :param poll_interval: seconds between looks at an empty queue
    :param stale_after: seconds without a heartbeat after which another worker's running job is
        failed as abandoned; must be the same on every worker of a queue, and longer than any
        pause a live worker could take (heartbeats are sent every ``min(10, stale_after / 3)`` s)
    :param create_table: create the queue table when missing
    :param allowed_modules: when set, only jobs whose target is in these packages (``["myapp."]``)
        are imported and run; others are failed unrun (anyone who can write the queue table could
        otherwise have any importable function run)
    """

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        concurrency: int = 1,
        poll_interval: float = 1.0,
        stale_after: float = 300.0,
        create_table: bool = True,
        allowed_modules: list[str] | None = None,
    ) -> None:
        self.url = parse_url(url, "--url")
        self.allowed = allowed_modules_of(allowed_modules, "--allowed-modules")
        if concurrency < 1:
            raise ConfigError(f"--concurrency: must be >= 1, got {concurrency}")
        if poll_interval <= 0:
            raise ConfigError(f"--poll-interval: must be > 0, got {poll_interval:g}")
        if stale_after <= 0:
            raise ConfigError(f"--stale-after: must be > 0, got {stale_after:g}")
        self.name = name or default_name()
        self.concurrency = concurrency
        self.poll_interval = poll_interval
        self.stale_after = stale_after
        self.heartbeat_interval = min(10.0, stale_after / 3)
        self.create_table = create_table
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self._running: dict[int, QueuedJob] = {}
        self._stop = threading.Event()
        #: Jobs this worker ended, by final state (for logs and tests).
        self.done = 0
        self.failed = 0

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise RuntimeError("Worker.open() has not been called")
        return self._engine

    def open(self) -> None:
        """Connect, create (or check) the table, and fail jobs a previous process of this name left running."""
        if self._engine is not None:
            return
        engine = create_queue_engine(self.url, pool_size=self.concurrency + 1)
        try:
            ensure_table(engine, create=self.create_table)
            left = queries.fail_leftovers(engine, self.name)
        except BaseException:
            engine.dispose()
            raise
        if left:
            log.warning("failed %d job(s) a previous worker named %s left running", left, self.name)
        self._engine = engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def stop(self) -> None:
        """Take no more jobs; :meth:`run` returns once the running ones end."""
        self._stop.set()

    # -- one job -----------------------------------------------------------------------------------

    def claim(self) -> QueuedJob | None:
        """Claim the oldest queued job for this worker, or return ``None`` when none is queued."""
        job = queries.claim_next(self.engine, self.name)
        if job is not None:
            with self._lock:
                self._running[job.id] = job
        return job

    def execute(self, job: QueuedJob) -> JobState:
        """Run a claimed job and record its end; return the recorded state."""
        log.info("job %d (%s, run %d): starting %s", job.id, job.schedule, job.run_id, job.target)
        error: str | None = None
        try:
            func = resolve(job.target, self.allowed)
            context = RunContext(
                schedule=job.schedule,
                scheduled_for=job.scheduled_for,
                run_id=job.run_id,
                attempt=job.attempt,
                node_id=job.node_id,
            )
            with running(context):
                result = func(**call_arguments(func, job.arguments, context))
                if inspect.iscoroutine(result):
                    asyncio.run(result)  # the coroutine's task runs in a copy of this context
        except BaseException as exc:  # a job's SystemExit must not end the worker thread unrecorded
            error = format_exception(exc, limit=MAX_ERROR_CHARS)
        state = JobState.DONE if error is None else JobState.FAILED
        try:
            self._finish(job, state, error)
        finally:
            with self._lock:
                self._running.pop(job.id, None)
        return state

    def _finish(self, job: QueuedJob, state: JobState, error: str | None) -> None:
        for attempt in range(1, FINISH_ATTEMPTS + 1):
            try:
                landed = queries.finish(self.engine, job.id, self.name, state, error)
                break
            except DBAPIError as exc:
                if attempt == FINISH_ATTEMPTS:
                    log.error("job %d: cannot record its end (%s): %s", job.id, state.value, exc.orig)
                    return
                time.sleep(attempt)
        if state is JobState.DONE:
            self.done += 1
        else:
            self.failed += 1
        if not landed:
            log.warning("job %d ended (%s) after it had been failed as stale; its end is not recorded", job.id, state)
        else:
            log.info(
                "job %d (%s): %s%s", job.id, job.schedule, state.value, f" - {error.splitlines()[0]}" if error else ""
            )

    # -- the loop ----------------------------------------------------------------------------------

    def _heartbeats(self, until: threading.Event) -> None:
        # Runs until the last job ended, not until stop(): a stopping worker's jobs are still alive.
        while not until.wait(self.heartbeat_interval):
            with self._lock:
                ids = list(self._running)
            try:
                queries.heartbeat(self.engine, self.name, ids)
            except DBAPIError as exc:
                log.warning("heartbeat failed: %s", exc.orig)

    def sweep(self) -> list[int]:
        """Fail running jobs whose worker stopped sending heartbeats; return their ids."""
        failed = queries.fail_stale(self.engine, self.stale_after)
        if failed:
            log.warning("failed %d job(s) of workers that stopped sending heartbeats: %s", len(failed), failed)
        return failed

    def run(self, *, once: bool = False) -> None:
        """Take and run jobs until :meth:`stop` (or, with ``once``, until no job is queued).

        Database errors are logged and retried, except with ``once``, where they are raised.
        """
        self.open()
        self._stop.clear()
        idle = threading.Event()
        beats = threading.Thread(target=self._heartbeats, args=(idle,), name="tickwork-jobqueue-heartbeat", daemon=True)
        beats.start()
        slots = threading.Semaphore(self.concurrency)
        pool = concurrent.futures.ThreadPoolExecutor(self.concurrency, thread_name_prefix="tickwork-jobqueue-job")
        next_sweep = 0.0
        backoff = 0.0

        def execute_then_release(job: QueuedJob) -> None:
            try:
                self.execute(job)
            finally:
                slots.release()

        try:
            while not self._stop.is_set():
                if not slots.acquire(timeout=self.poll_interval):
                    continue
                try:
                    if time.monotonic() >= next_sweep:
                        self.sweep()
                        next_sweep = time.monotonic() + self.heartbeat_interval
                    job = self.claim()
                    backoff = 0.0
                except DBAPIError as exc:
                    slots.release()
                    if once:
                        raise
                    backoff = min(max(backoff * 2, 0.5), 30.0)
                    log.warning("cannot reach the queue database (%s); retrying in %.1fs", exc.orig, backoff)
                    self._stop.wait(backoff)
                    continue
                if job is None:
                    slots.release()
                    if once:
                        break
                    self._stop.wait(self.poll_interval)
                    continue
                pool.submit(execute_then_release, job)
        finally:
            pool.shutdown(wait=True)
            idle.set()
            beats.join()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tickwork_jobqueue.worker",
        description="Run the jobs tickwork's jobqueue executor enqueued.",
    )
    parser.add_argument(
        "--url",
        default=os.environ.get(URL_ENV),
        help=f"queue database: sqlite:///PATH or postgresql://... (default: ${URL_ENV})",
    )
    parser.add_argument("--once", action="store_true", help="run the queued jobs, then exit when none is left")
    parser.add_argument("--concurrency", type=int, default=1, help="jobs run at once (default 1)")
    parser.add_argument("--name", help="worker name recorded on its jobs (default HOST-PID)")
    parser.add_argument("--poll-interval", type=float, default=1.0, help="seconds between looks at an empty queue")
    parser.add_argument(
        "--stale-after",
        type=float,
        default=300.0,
        help="seconds without heartbeat after which a running job is failed as abandoned (default 300)",
    )
    parser.add_argument("--no-create-table", action="store_true", help="require the queue table to exist")
    parser.add_argument(
        "--allowed-modules",
        default=os.environ.get(ALLOWED_ENV),
        metavar="PKG[,PKG...]",
        help=f"run only targets in these packages, e.g. myapp.,reports.jobs (default: ${ALLOWED_ENV}; unset: any)",
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status (0, or 2 for a usage or configuration error,
    1 when the queue database cannot be used). Failed jobs do not change it: they are recorded."""
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not args.url:
        parser.error(f"--url is required (or set ${URL_ENV})")
    try:
        worker = Worker(
            args.url,
            name=args.name,
            concurrency=args.concurrency,
            poll_interval=args.poll_interval,
            stale_after=args.stale_after,
            create_table=not args.no_create_table,
            allowed_modules=None if args.allowed_modules is None else args.allowed_modules.split(","),
        )
    except (ConfigError, ExecutorError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s; stopping after the running jobs end", signal.Signals(signum).name)
        worker.stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    try:
        worker.run(once=args.once)
    except ConfigError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    except DBAPIError as exc:
        print(f"{parser.prog}: error: queue database {describe(worker.url)}: {exc.orig}", file=sys.stderr)
        return 1
    finally:
        worker.close()
    log.info("worker %s stopped (%d done, %d failed)", worker.name, worker.done, worker.failed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
