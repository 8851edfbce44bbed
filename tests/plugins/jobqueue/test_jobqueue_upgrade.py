"""A queue table created by an older tickwork (without the enqueuing run's ``attempt`` and
``node_id``): a worker or executor that starts on it adds the columns, a job enqueued before runs
with the documented stand-ins, and ``create_table = false`` names what to add. Real worker
processes, SQLite and PostgreSQL."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    insert,
    inspect,
)

from tests.support.jobqueue_helpers import Outcomes, call, queue_url_for, rows, run_worker
from tickwork.errors import ConfigError
from tickwork.sql.schema import UTCDateTime
from tickwork.structures import RunStatus
from tickwork_jobqueue.database import create_queue_engine, ensure_table, parse_url
from tickwork_jobqueue.executor import JobQueueExecutor

FIRE = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgres"])
def queue_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return queue_url_for(request.param, request, tmp_path)


def create_old_table_with_a_queued_job(url: str, out: Path) -> None:
    """The table as the first release created it, holding one job that release enqueued."""
    metadata = MetaData()
    old = Table(
        "tickwork_jobqueue",
        metadata,
        Column("id", BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True),
        Column("schedule", String(200), nullable=False),
        Column("run_id", BigInteger, nullable=False),
        Column("scheduled_for", UTCDateTime, nullable=False),
        Column("target", Text, nullable=False),
        Column("arguments", JSON, nullable=False),
        Column("state", String(16), nullable=False),
        Column("enqueued_at", UTCDateTime, nullable=False),
        Column("started_at", UTCDateTime, nullable=True),
        Column("heartbeat_at", UTCDateTime, nullable=True),
        Column("finished_at", UTCDateTime, nullable=True),
        Column("worker", String(200), nullable=True),
        Column("error", Text, nullable=True),
    )
    engine = create_queue_engine(parse_url(url))
    try:
        with engine.begin() as conn:
            metadata.create_all(conn)
            conn.execute(
                insert(old).values(
                    schedule="legacy",
                    run_id=41,
                    scheduled_for=FIRE,
                    target="tests.support.context_jobs:record",
                    arguments={"out": str(out)},
                    state="queued",
                    enqueued_at=FIRE,
                )
            )
    finally:
        engine.dispose()


def columns(url: str) -> set[str]:
    engine = create_queue_engine(parse_url(url))
    try:
        return {c["name"] for c in inspect(engine).get_columns("tickwork_jobqueue")}
    finally:
        engine.dispose()


def test_a_worker_adds_the_columns_and_runs_the_job_an_older_tickwork_enqueued(queue_url: str, tmp_path: Path) -> None:
    out = tmp_path / "context.jsonl"
    create_old_table_with_a_queued_job(queue_url, out)
    assert "attempt" not in columns(queue_url)

    result = run_worker("--url", queue_url, "--once", "--name", "w-upgrade")

    assert result.returncode == 0, result.stderr
    assert "added column(s) attempt, node_id to the existing tickwork_jobqueue table" in result.stderr
    assert {"attempt", "node_id"} <= columns(queue_url)
    (job,) = rows(queue_url)
    assert job["state"] == "done" and job["attempt"] is None and job["node_id"] is None
    (line,) = [json.loads(x) for x in out.read_text().splitlines()]
    # The row does not say which attempt or node enqueued it: the documented stand-ins.
    assert (
        line["current"]
        == line["param"]
        == {
            "schedule": "legacy",
            "scheduled_for": FIRE.isoformat(),
            "run_id": 41,
            "attempt": 1,
            "node_id": "unknown",
        }
    )


def test_after_the_upgrade_new_jobs_carry_their_run(queue_url: str, tmp_path: Path) -> None:
    create_old_table_with_a_queued_job(queue_url, tmp_path / "ignored.jsonl")
    executor = JobQueueExecutor(queue_url)
    executor.start()  # adds the columns (a second start, below, finds them and changes nothing)
    try:
        outcomes = Outcomes()
        executor.submit(
            replace(call(7, "fresh", "tests.support.context_jobs:record", out="x"), attempt=3, node_id="node-b"),
            outcomes,
        )
        (outcome,) = outcomes.wait()
    finally:
        executor.shutdown()
    assert outcome.status is RunStatus.SUCCEEDED, outcome
    engine = create_queue_engine(parse_url(queue_url))
    try:
        ensure_table(engine)
    finally:
        engine.dispose()
    fresh = [r for r in rows(queue_url) if r["schedule"] == "fresh"]
    assert [(r["run_id"], r["attempt"], r["node_id"]) for r in fresh] == [(7, 3, "node-b")]


def test_create_table_false_names_the_missing_columns_and_how_to_add_them(queue_url: str, tmp_path: Path) -> None:
    create_old_table_with_a_queued_job(queue_url, tmp_path / "ignored.jsonl")
    executor = JobQueueExecutor(queue_url, create_table=False)
    with pytest.raises(ConfigError) as info:
        executor.start()
    message = str(info.value)
    assert "the tickwork_jobqueue table lacks column(s) attempt, node_id" in message
    assert "ALTER TABLE tickwork_jobqueue ADD COLUMN attempt INTEGER" in message
    assert "ALTER TABLE tickwork_jobqueue ADD COLUMN node_id VARCHAR(200)" in message
    assert "attempt" not in columns(queue_url)  # nothing was changed
