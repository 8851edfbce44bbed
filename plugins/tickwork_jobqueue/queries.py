"""Every statement on the queue table: enqueue (the executor), claim, heartbeat and finish (workers)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, Select, insert, select, update
from sqlalchemy.exc import IntegrityError

from tickwork.structures import JobCall

from .database import db_now, transaction
from .schema import ACTIVE_STATES, LEGACY_ATTEMPT, LEGACY_NODE_ID, JobState, jobs


@dataclass(frozen=True)
class QueuedJob:
    """A job a worker claimed: what to call, with which arguments, for which fire; ``run_id``,
    ``attempt`` and ``node_id`` are those of the run that enqueued it."""

    id: int
    schedule: str
    run_id: int
    scheduled_for: datetime
    target: str
    arguments: dict[str, Any]
    attempt: int
    node_id: str


@dataclass(frozen=True)
class EnqueueResult:
    """Either ``job_id`` (a new queued job) or the job that blocked it (``blocked_by``, ``blocked_state``)."""

    job_id: int | None = None
    blocked_by: int | None = None
    blocked_state: str | None = None


def _active_job(conn: Connection, schedule: str) -> tuple[int, str] | None:
    """The queued or running job of ``schedule`` as ``(id, state)``, if there is one."""
    row = conn.execute(
        select(jobs.c.id, jobs.c.state)
        .where(jobs.c.schedule == schedule, jobs.c.state.in_(ACTIVE_STATES))
        .order_by(jobs.c.id)
        .limit(1)
    ).first()
    return None if row is None else (row.id, row.state)


def enqueue(engine: Engine, call: JobCall, timeout: float | None = None) -> EnqueueResult:
    """In one transaction: queue ``call`` unless a queued or running job of its schedule exists.

    :param timeout: seconds the transaction may wait for locks; see :func:`.database.transaction`
    """
    try:
        with transaction(engine, timeout) as conn:
            active = _active_job(conn, call.schedule)
            if active is not None:
                return EnqueueResult(blocked_by=active[0], blocked_state=active[1])
            job_id = conn.execute(
                insert(jobs)
                .values(
                    schedule=call.schedule,
                    run_id=call.run_id,
                    scheduled_for=call.scheduled_for,
                    attempt=call.attempt,
                    node_id=call.node_id,
                    target=call.target,
                    arguments=call.arguments,
                    state=JobState.QUEUED.value,
                    enqueued_at=db_now(conn),
                )
                .returning(jobs.c.id)
            ).scalar_one()
            return EnqueueResult(job_id=job_id)
    except IntegrityError:
        # Another submitter inserted between our check and our insert; the unique index stopped us.
        with transaction(engine, timeout) as conn:
            active = _active_job(conn, call.schedule)
        if active is None:
            raise
        return EnqueueResult(blocked_by=active[0], blocked_state=active[1])


def _lock_skipping(conn: Connection, query: Select[Any]) -> Select[Any]:
    # SQLite has no row locks: its BEGIN IMMEDIATE already gives this transaction the whole file.
    return query.with_for_update(skip_locked=True) if conn.dialect.name == "postgresql" else query


def claim_next(engine: Engine, worker: str) -> QueuedJob | None:
    """Mark the oldest queued job ``running`` by ``worker`` and return it (``None`` if none is queued).

    On PostgreSQL ``FOR UPDATE SKIP LOCKED`` lets concurrent workers each take a different job
    without waiting on one another; on SQLite the transaction holds the write lock from its start.
    """
    with transaction(engine) as conn:
        query = select(jobs).where(jobs.c.state == JobState.QUEUED.value).order_by(jobs.c.id).limit(1)
        row = conn.execute(_lock_skipping(conn, query)).first()
        if row is None:
            return None
        now = db_now(conn)
        conn.execute(
            update(jobs)
            .where(jobs.c.id == row.id)
            .values(state=JobState.RUNNING.value, started_at=now, heartbeat_at=now, worker=worker)
        )
        return QueuedJob(
            id=row.id,
            schedule=row.schedule,
            run_id=row.run_id,
            scheduled_for=row.scheduled_for,
            target=row.target,
            arguments=dict(row.arguments or {}),
            # Empty in rows enqueued by a tickwork that did not record them.
            attempt=LEGACY_ATTEMPT if row.attempt is None else row.attempt,
            node_id=LEGACY_NODE_ID if row.node_id is None else row.node_id,
        )


def finish(engine: Engine, job_id: int, worker: str, state: JobState, error: str | None = None) -> bool:
    """Record how a job ended; only lands while ``worker`` still holds it.

    :return: False when the job had been taken away (failed as stale) before it ended
    """
    if not state.final:
        raise ValueError(f"state: a job ends as done or failed, not {state.value!r}")
    with transaction(engine) as conn:
        result = conn.execute(
            update(jobs)
            .where(jobs.c.id == job_id, jobs.c.state == JobState.RUNNING.value, jobs.c.worker == worker)
            .values(state=state.value, finished_at=db_now(conn), error=error)
        )
        return result.rowcount == 1


def heartbeat(engine: Engine, worker: str, job_ids: Collection[int]) -> None:
    """Refresh ``heartbeat_at`` of the jobs ``worker`` is running."""
    if not job_ids:
        return
    with transaction(engine) as conn:
        conn.execute(
            update(jobs)
            .where(jobs.c.id.in_(list(job_ids)), jobs.c.state == JobState.RUNNING.value, jobs.c.worker == worker)
            .values(heartbeat_at=db_now(conn))
        )


def fail_stale(engine: Engine, stale_after: float) -> list[int]:
    """Fail running jobs whose worker has not sent a heartbeat for ``stale_after`` seconds.

    Such a worker is presumed dead; failing its job unblocks the schedule (a running job blocks
    new ones). A worker that was only slow finds its job gone when it ends (:func:`finish`).

    :return: the ids of the failed jobs
    """
    with transaction(engine) as conn:
        now = db_now(conn)
        query = select(jobs.c.id, jobs.c.worker, jobs.c.heartbeat_at).where(
            jobs.c.state == JobState.RUNNING.value, jobs.c.heartbeat_at < now - timedelta(seconds=stale_after)
        )
        failed = []
        for row in conn.execute(_lock_skipping(conn, query)).all():
            message = (
                f"worker {row.worker} sent no heartbeat since {row.heartbeat_at.isoformat(timespec='seconds')} "
                f"(stale after {stale_after:g}s); presumed dead"
            )
            done = conn.execute(
                update(jobs)
                .where(jobs.c.id == row.id, jobs.c.state == JobState.RUNNING.value)
                .values(state=JobState.FAILED.value, finished_at=now, error=message)
            )
            if done.rowcount == 1:
                failed.append(row.id)
        return failed


def fail_leftovers(engine: Engine, worker: str) -> int:
    """Fail the jobs a previous process with the same worker name left running (it was killed).

    :return: how many jobs were failed
    """
    with transaction(engine) as conn:
        result = conn.execute(
            update(jobs)
            .where(jobs.c.state == JobState.RUNNING.value, jobs.c.worker == worker)
            .values(
                state=JobState.FAILED.value,
                finished_at=db_now(conn),
                error=f"worker {worker} restarted while the job was running",
            )
        )
        return result.rowcount
