"""The ``handoff`` workload: N schedules due at one minute boundary on K tickwork nodes that hand
every fire to a queue (``celery``, ``rq`` or ``dramatiq``) and real workers that run them; in the
same run, with ``--beats``, Celery beat itself with the same N ``crontab()`` entries on the same
broker (its own queue and worker) firing the same minute.

What is measured (docs/benchmarks.md, "Hand-off: tickwork vs Celery beat"): for tickwork, the
time from the minute until every fire is handed off (its message confirmed by the broker: every
run ``submitted`` or further in the history, polled), until every task has run (the workers'
own record), and repeats (must be 0); for beat, how many of the N tasks each beat sent within
the minute, their lag, and the executions per entry (two beats: duplicates).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import case, func, select

from tickwork.sql.schema import runs

from .handoffapp import FIRE_TASK
from .handoffjobs import BROKER_ENV, LOG_ENV, QUEUE_ENV
from .handoffmetrics import HANDED_OFF, MINUTE_S, beat_metrics, tickwork_metrics
from .handoffprocs import Service, beat_argv, delete_queues, queue_name, ready_time, start_workers
from .handoffraw import raw_publish
from .procs import Child, ChildError, collect
from .scratch import DueSet, Scratch

#: Every minute, as Celery's ``crontab()``.
EVERY_MINUTE = "* * * * *"
TARGETS = {
    "celery": FIRE_TASK,
    "rq": "tickwork_bench.handoffrq.fire",
    "dramatiq": "tickwork_bench.handoffdramatiq:fire",
}
#: Beats are started only this early in a minute, so that the first boundary they fire is the
#: one after (their start with 20,000 entries takes a few seconds).
BEAT_START_BY_S = 40.0
POLL_S = 0.05
#: Seconds the workers are kept, once every task ran, for their reports of the last ones to reach
#: the history (a task's body ends before its worker reports it): the cell reports the history.
REPORT_GRACE_S = 10.0
#: Statuses a handed-off run has until its worker reports how it ended.
UNREPORTED = ("submitted", "started")


@dataclass(frozen=True)
class HandoffSettings:
    schedules: int
    nodes: int
    executor: str
    broker: str
    beats: int
    membership: str
    work_dir: Path
    concurrency: int
    publish_threads: int
    lookahead: float
    batch_size: int
    max_in_flight: int
    #: seconds after the due time until which everything must have run
    timeout: float
    ready_timeout: float = 120.0
    #: modules every node imports before it starts (``--node-import``)
    node_imports: tuple[str, ...] = ()


class JsonLines:
    """A file of JSON lines other processes append to, read incrementally."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: list[dict[str, Any]] = []
        self._offset = 0
        self._partial = b""

    def read(self) -> list[dict[str, Any]]:
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return self.items
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        self.items.extend(json.loads(line) for line in lines if line.strip())
        return self.items


class HandoffRun:
    """One hand-off run on ``scratch``: start everything, fire one minute, measure, clean up."""

    def __init__(self, scratch: Scratch, settings: HandoffSettings, progress: Any) -> None:
        self.scratch = scratch
        self.s = settings
        self.progress = progress
        self.errors: list[str] = []
        self.queue = queue_name("tickwork")
        self.beat_queue = queue_name("beat")
        work = settings.work_dir
        self.executions = JsonLines(work / "executions.jsonl")
        self.sends = JsonLines(work / "beat-sends.jsonl")
        self.env = dict(os.environ, **{BROKER_ENV: settings.broker, LOG_ENV: str(self.executions.path)})
        self.services: list[Service] = []
        self.beat_workers: list[Service] = []
        self.beats: list[Service] = []
        self.nodes: list[Child] = []
        self.node_results: list[dict[str, Any]] = []
        #: fires of the minute handed off, when the last of them was (database clock), and
        #: whether every fire of the minute has been decided (handed off, skipped or failed)
        self.handed_off = 0
        self.handed_off_at: float | None = None
        self.settled = False
        #: when every task of the minute had run (monotonic; the reports' grace runs from there)
        self._all_ran_at: float | None = None
        #: when the nodes were stopped (machine clock): once the minute was settled
        self.nodes_stopped_at: float | None = None
        #: the broker's own publish rate measured in this run (:mod:`.handoffraw`)
        self.raw: dict[str, Any] | None = None

    # -- the run ---------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        t0: datetime | None = None
        try:
            self.scratch.prepare(1)
            self.progress.message(f"seeding {self.s.schedules:,} schedules")
            due = DueSet("cron", lambda _i: EVERY_MINUTE, executor=self.s.executor, target=TARGETS[self.s.executor])
            self.scratch.seed(self.s.schedules, self.s.schedules, due)
            self._start_workers()
            self._start_nodes()
            self._measure_raw()
            t0 = self._start_beats_and_pick_minute()
            self.scratch.arm(0.0, align=False, at=t0)
            self.progress.message(f"armed for {t0.isoformat()}")
            self._watch(t0.timestamp())
        except ChildError as exc:
            self.errors.append(str(exc))
        except KeyboardInterrupt:
            self.errors.append("interrupted: reporting what was measured so far")
        finally:
            self._stop_all()
        return self._report(t0)

    def _worker_env(self, queue: str) -> dict[str, str]:
        config = self.s.work_dir / "worker.toml"
        store = {"plugin": self.scratch.plugin, **self.scratch.store_options()}
        config.write_text("[store]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in store.items()))
        return dict(self.env, TICKWORK_CONFIG=str(config), **{QUEUE_ENV: queue})

    def _start_workers(self) -> None:
        self.progress.message("starting the workers")
        s = self.s
        env = self._worker_env(self.queue)
        self.services += start_workers(s.executor, s.broker, self.queue, s.concurrency, env, s.work_dir, "tickwork")
        if s.beats:
            env = self._worker_env(self.beat_queue)
            self.beat_workers += start_workers(
                "celery", s.broker, self.beat_queue, s.concurrency, env, s.work_dir, "beat"
            )

    def _executor_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"queue": self.queue, "threads": self.s.publish_threads}
        if self.s.executor == "celery":
            options["app"] = "tickwork_bench.handoffapp:app"
        elif self.s.executor == "rq":
            options["url"] = self.s.broker
        else:
            options["broker"] = "tickwork_bench.handoffdramatiq:broker"
        return options

    def _start_nodes(self) -> None:
        self.progress.message(f"starting {self.s.nodes} node(s)")
        s = self.s
        store_options = {**self.scratch.store_options(), "batch_size": s.batch_size}
        membership = "single" if s.nodes == 1 else s.membership
        env = dict(self.env, **{QUEUE_ENV: self.queue})
        for k in range(1, s.nodes + 1):
            args = [
                "--node-id", f"bench-node-{k}", "--store", self.scratch.plugin,
                "--store-options", json.dumps(store_options), "--membership", membership,
                "--lookahead", str(s.lookahead), "--max-in-flight", str(s.max_in_flight), "--executor", s.executor,
                "--executor-options", json.dumps(self._executor_options()),
                "--max-seconds", str(3 * MINUTE_S + s.timeout + s.ready_timeout),
                *(arg for module in s.node_imports for arg in ("--import", module)),
            ]  # fmt: skip
            self.nodes.append(Child(f"node{k}", "tickwork_bench.nodeproc", args, s.work_dir / f"node{k}.log", env))
        for node in self.nodes:
            node.wait_event("ready", self.s.ready_timeout)
        if s.nodes > 1:
            time.sleep(2.0)  # a hash ring learns of the other nodes at their next heartbeat

    def _measure_raw(self) -> None:
        """The broker's own publish rate in this run, on the machine as loaded as the hand-off
        finds it (workers and nodes started and idle): :mod:`.handoffraw`."""
        self.progress.message(f"measuring the broker's raw publish rate ({self.s.schedules:,} messages)")
        try:
            self.raw = raw_publish(self.s.broker, self.s.schedules)
        except Exception as exc:
            self.errors.append(f"cannot measure the broker's raw publish rate: {exc}")

    def _start_beats_and_pick_minute(self) -> datetime:
        """Start the beats early in a minute and return the boundary they fire first (the
        machine's clock, which is also the database's here); without beats, the first whole
        second at least the lookahead and two seconds away (no need to wait for a minute: the
        fires of the next boundary, if it comes during the run, are left out of every count)."""
        margin = self.s.lookahead + 2.0
        if not self.s.beats:
            return datetime.fromtimestamp(math.ceil(self.scratch.now().timestamp() + margin), UTC)
        if time.time() % MINUTE_S > BEAT_START_BY_S:
            self.progress.message("waiting for the next minute to start the beats")
            time.sleep(MINUTE_S - time.time() % MINUTE_S + 0.2)
        self.progress.message(f"starting {self.s.beats} beat(s) with {self.s.schedules:,} entries")
        marks = []
        for b in range(1, self.s.beats + 1):
            mark = self.s.work_dir / f"beat{b}.ready"
            env = dict(
                self._worker_env(self.beat_queue),
                TICKWORK_BENCH_ENTRIES=str(self.s.schedules),
                TICKWORK_BENCH_SENDS=str(self.sends.path),
                TICKWORK_BENCH_READY=str(mark),
                TICKWORK_BENCH_BEAT=f"beat{b}",
            )
            argv = beat_argv(self.s.work_dir / f"beat{b}-schedule")
            self.beats.append(Service(f"beat{b}", argv, env, self.s.work_dir / f"beat{b}.log"))
            marks.append(mark)
        deadline = time.monotonic() + self.s.ready_timeout
        while any(ready_time(m) is None for m in marks):
            for beat in self.beats:
                if beat.proc.poll() is not None:
                    raise ChildError(f"{beat.name} exited with status {beat.proc.returncode}\n{beat.tail()}")
            if time.monotonic() > deadline:
                raise ChildError(f"the beats did not set their schedule up within {self.s.ready_timeout:g}s")
            time.sleep(0.1)
        first = min(t for m in marks if (t := ready_time(m)) is not None)
        last = max(t for m in marks if (t := ready_time(m)) is not None)
        t0 = self._boundary_after(first)
        if self._boundary_after(last) != t0 or self.scratch.now().timestamp() + margin > t0.timestamp():
            raise ChildError("the beats took too long to start: they would fire before tickwork could be armed")
        return t0

    @staticmethod
    def _boundary_after(epoch: float) -> datetime:
        return datetime.fromtimestamp(math.floor(epoch / MINUTE_S + 1) * MINUTE_S, UTC)

    def _reported(self, t0: datetime) -> bool:
        """Whether the workers' reports of the minute's runs reached the history, or
        :data:`REPORT_GRACE_S` passed since every task ran (a report lost stays in the cell's
        history as it was)."""
        if self._all_ran_at is None:
            self._all_ran_at = time.monotonic()
        if time.monotonic() - self._all_ran_at >= REPORT_GRACE_S:
            return True
        waiting = func.coalesce(func.sum(case((runs.c.status.in_(UNREPORTED), 1), else_=0)), 0)
        with self.scratch.engine.connect() as conn:
            return int(conn.execute(select(waiting).where(runs.c.scheduled_for == t0)).scalar_one()) == 0

    def _handed_off(self, t0: datetime) -> tuple[int, int, float]:
        """Fires due at ``t0`` recorded handed off (or further), those no longer running (handed
        off, skipped or failed), and the database time."""
        # SUM(CASE ...), not COUNT(*) FILTER: MySQL/MariaDB have no FILTER clause.
        handed = func.coalesce(func.sum(case((runs.c.status.in_(HANDED_OFF), 1), else_=0)), 0)
        settled = func.coalesce(func.sum(case((runs.c.status != "running", 1), else_=0)), 0)
        with self.scratch.engine.connect() as conn:
            row = conn.execute(select(handed, settled).where(runs.c.scheduled_for == t0)).one()
            now = conn.execute(select(self.scratch.store.now_expr())).scalar_one()
        return int(row[0]), int(row[1]), now.timestamp()

    def _watch(self, t0: float) -> None:
        """Until tickwork's fires ran and the beats' minute is over and what they sent ran."""
        n, deadline = self.s.schedules, time.time() + max(t0 - time.time(), 0) + self.s.timeout
        t0_dt = datetime.fromtimestamp(t0, UTC)
        t0_iso = t0_dt.isoformat()
        beats_done = not self.beats
        while time.time() < deadline:
            done = self.executions.read()
            # This minute's fires only: a hand-off slower than a minute meets the next one's.
            ran = sum(1 for e in done if e["kind"] == "tickwork" and e["scheduled_for"] == t0_iso)
            if not self.settled and time.time() >= t0:
                handed, settled, now = self._handed_off(t0_dt)
                if handed > self.handed_off:
                    self.handed_off, self.handed_off_at = handed, now
                self.settled = settled >= n
            if self.beats and not beats_done:
                sent = len(self.sends.read())
                if sent >= n * self.s.beats or time.time() >= t0 + MINUTE_S - 0.5:
                    # Not waiting for them to exit: the hand-off may still be being polled.
                    for beat in self.beats:
                        beat.terminate()
                    beats_done = True
            if self.nodes and self.settled:
                # The minute is handed off: the nodes' part is done, and their next minutes'
                # fires must not join this minute's in the queue while the workers drain it
                # (20,000 a minute outrun a slow machine's worker, and the cell never ended).
                self._stop_nodes()
                self.nodes_stopped_at = time.time()
                self.progress.message(f"handed off {self.handed_off:,}; waiting for the workers to run them")
            tickwork_done = self.settled and ran >= self.handed_off
            if self.services and tickwork_done and self._reported(t0_dt):
                self._stop_workers()
            beat_ran = sum(1 for e in done if e["kind"] == "beat")
            self.progress.update(ran + beat_ran, n + len(self.sends.items))
            if tickwork_done and not self.services and beats_done and beat_ran >= len(self.sends.read()):
                return
            time.sleep(POLL_S)
        self.errors.append(f"not everything ran within {self.s.timeout:g}s of the minute (see the logs)")

    # -- the end ---------------------------------------------------------------------------------

    def _stop_beats(self) -> None:
        for beat in self.beats:
            beat.stop(timeout=30)

    def _stop_nodes(self) -> None:
        """The nodes, and their reports kept."""
        for node in self.nodes:
            node.terminate()
        results, errors = collect(self.nodes, "result", 120)
        self.nodes = []
        self.node_results += [{k: v for k, v in r.items() if k != "event"} for r in results]
        self.errors.extend(errors)

    def _stop_workers(self) -> None:
        """Tickwork's workers, once they ran the minute: they must not load the machine while
        beat's worker drains its queue."""
        for service in self.services:
            service.stop()
        self.services = []

    def _stop_all(self) -> None:
        self._stop_beats()
        self._stop_nodes()
        self._stop_workers()
        for service in self.beat_workers:
            service.stop()
        queues = [self.queue, *([self.beat_queue] if self.s.beats else [])]
        try:
            self.errors.extend(delete_queues(self.s.executor, self.s.broker, queues[:1]))
            if self.s.beats:
                self.errors.extend(delete_queues("celery", self.s.broker, queues[1:]))
        except Exception as exc:
            self.errors.append(f"cannot delete the queues {', '.join(queues)}: {exc}")

    def _report(self, t0: datetime | None) -> dict[str, Any]:
        s = self.s
        out: dict[str, Any] = {
            "workload": "handoff",
            "executor": s.executor,
            "store": self.scratch.plugin,
            "nodes": s.nodes,
            "membership": "single" if s.nodes == 1 else s.membership,
            "schedules": s.schedules,
            "beats": s.beats,
            "queues": {"tickwork": self.queue, **({"beat": self.beat_queue} if s.beats else {})},
            "t0": None if t0 is None else t0.isoformat(),
            "node_results": self.node_results,
            "nodes_stopped_s": None
            if t0 is None or self.nodes_stopped_at is None
            else self.nodes_stopped_at - t0.timestamp(),
            "errors": self.errors,
        }
        if t0 is None:
            return out
        rows = self.scratch.run_rows(t0)
        statuses = Counter(r.status for r in rows if r.scheduled_for == t0)
        done = self.executions.read()
        out["tickwork"] = tickwork_metrics(
            schedules=s.schedules,
            t0=t0.timestamp(),
            handed_off_at=self.handed_off_at if self.settled else None,
            executions=[e for e in done if e["kind"] == "tickwork" and e["scheduled_for"] == t0.isoformat()],
            statuses=statuses,
            history_duplicates=self.scratch.duplicates(),
        )
        out["raw_publish"] = self.raw
        rate = out["tickwork"]["handed_off_per_s"]
        # The run's figure: the hand-off against the broker's own publish, both in this run.
        out["tickwork"]["to_raw"] = rate / self.raw["per_s"] if rate and self.raw else None
        if s.beats:
            out["beat"] = beat_metrics(
                schedules=s.schedules,
                beats=s.beats,
                t0=t0.timestamp(),
                sends=self.sends.read(),
                executions=[e for e in done if e["kind"] == "beat"],
            )
        return out
