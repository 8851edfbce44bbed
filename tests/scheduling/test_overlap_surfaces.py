"""``overlap`` everywhere a schedule is made or shown, and the ``cancelled`` status in the schema:

- the command line as a subprocess: ``jobs add|update --overlap``, ``jobs show``, ``jobs list
  --json``; ``allow`` with ``--max-concurrent``; a bad bound refused with the admin API's words;
- a schedule file and the decorators (tests/scheduling/test_schedule_options.py reads every option through
  every reader; here the declared default);
- ``SchedulerHarness`` plans it as a node does;
- migration 0007 on SQLite, PostgreSQL and MySQL: a ``cancelled`` run is stored; a downgrade to
  0006 keeps the row as ``abandoned`` saying what it was.
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, insert, select, text

import tickwork
from tests.support.forkedcli import run_tickwork
from tests.support.paths import REPO
from tickwork.sql import migrations
from tickwork.sql.schema import runs, schedules
from tickwork.structures import ScheduleSpec
from tickwork.testing import FakeClock, SchedulerHarness
from tickwork_mysql.store import sqlalchemy_url

RECORD = "tests.support.jobs_for_tests:record"


def tw(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_tickwork(args, cwd=workdir, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})


def listed(workdir: Path) -> list[dict[str, object]]:
    """``tickwork --json jobs list``: one JSON object a line."""
    done = tw(workdir, "--json", "jobs", "list")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_the_command_line_adds_updates_shows_and_refuses(tmp_path: Path) -> None:
    assert tw(tmp_path, "db", "upgrade").returncode == 0
    added = tw(tmp_path, "jobs", "add", "sync", "*/5 * * * *", RECORD, "--overlap", "buffer_all", "--max-catchup", "3")
    assert added.returncode == 0, added.stderr
    shown = tw(tmp_path, "jobs", "show", "sync")
    assert "overlap:      buffer_all" in shown.stdout, shown.stdout
    updated = tw(tmp_path, "jobs", "update", "sync", "--overlap", "cancel_other")
    assert updated.returncode == 0, updated.stderr
    (sync,) = listed(tmp_path)
    assert sync["overlap"] == "cancel_other" and sync["max_catchup"] == 3
    allowed = tw(tmp_path, "jobs", "update", "sync", "--overlap", "allow", "--max-concurrent", "2")
    assert allowed.returncode == 0, allowed.stderr
    assert "overlap:      allow (at most 2 at once; not retried)" in tw(tmp_path, "jobs", "show", "sync").stdout
    refused = tw(tmp_path, "jobs", "update", "sync", "--overlap", "cancel_other", "--max-concurrent", "0")
    assert refused.returncode == 2
    assert refused.stderr.strip().startswith("tickwork: error: max_concurrent"), refused.stderr
    bad = tw(tmp_path, "jobs", "add", "other", "*/5 * * * *", RECORD, "--overlap", "sometimes")
    assert bad.returncode == 2 and "invalid choice: 'sometimes'" in bad.stderr
    (kept,) = listed(tmp_path)
    assert kept["overlap"] == "allow" and kept["max_concurrent"] == 2


def test_a_schedule_file_and_the_default(tmp_path: Path) -> None:
    assert tw(tmp_path, "db", "upgrade").returncode == 0
    (tmp_path / "jobs.toml").write_text(
        f'[[schedule]]\nname = "a"\nexpression = "* * * * *"\ntarget = "{RECORD}"\noverlap = "buffer_one"\n'
        f'[[schedule]]\nname = "b"\nexpression = "* * * * *"\ntarget = "{RECORD}"\n',
        encoding="utf-8",
    )
    loaded = tw(tmp_path, "jobs", "add", "--from", "jobs.toml")
    assert loaded.returncode == 0, loaded.stderr
    assert {s["name"]: s["overlap"] for s in listed(tmp_path)} == {"a": "buffer_one", "b": "skip"}


# -- the test harness ---------------------------------------------------------------------------

START = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
clock = FakeClock(START)
ran: list[datetime] = []


def slow_job() -> None:
    """Takes 2.5 s of the harness's fake time."""
    ran.append(tickwork.current_run().scheduled_for)
    clock.advance(2.5)


@pytest.mark.parametrize(
    ("overlap", "expected_runs", "expected_skipped"),
    [
        # Fires every second from 12:00:01; each run takes 2.5 s. skip: the fires due during a
        # run are skipped and the next one after its end runs.
        ("skip", [1, 4, 7], [2, 3, 5, 6]),
        # buffer_one: the latest fire due during the run waits and starts at its end (run 1 ends
        # at 3.5: 3 waits; run 3 ends at 6.0: 6 waits).
        ("buffer_one", [1, 3, 6], [2, 4, 5]),
        # buffer_all: every one waits, in order (all well within the 30 s grace here).
        ("buffer_all", [1, 2, 3, 4, 5, 6, 7], []),
        # cancel_other: the harness cannot stop a job on its fake clock; the latest fire runs after it.
        ("cancel_other", [1, 3, 6], [2, 4, 5]),
    ],
)
def test_the_harness_plans_overlap_as_a_node(
    overlap: str, expected_runs: list[int], expected_skipped: list[int]
) -> None:
    clock.set(START)
    ran.clear()
    spec = ScheduleSpec("slow", "cron", "* * * * * *", f"{__name__}:slow_job", overlap=overlap)
    with SchedulerHarness([spec], clock=clock) as harness:
        harness.advance(7)
        history = sorted(harness.store.history(limit=1000), key=lambda r: r.scheduled_for)
    seconds = [int((t - START).total_seconds()) for t in ran]
    assert seconds[: len(expected_runs)] == expected_runs
    skipped = [int((r.scheduled_for - START).total_seconds()) for r in history if r.status.value == "skipped"]
    assert [s for s in skipped if s <= expected_runs[-1]] == expected_skipped
    for r in history:
        if r.status.value == "skipped" and overlap != "skip":
            assert f"overlap {overlap}" in (r.error or "")


# -- migration 0007 -----------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres", "mysql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'm.db'}"
    if request.param == "mysql":
        return sqlalchemy_url(request.getfixturevalue("mysql_url"))
    return str(request.getfixturevalue("postgres_url"))


def test_migration_0007_stores_cancelled_and_a_downgrade_keeps_the_row(url: str) -> None:
    engine = create_engine(url)
    now = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn)
            migrations.downgrade(conn, "0007")  # this test is about 0007; later ones are theirs
            assert migrations.current_revision(conn) == "0007"
            schedule_id = conn.execute(
                insert(schedules).values(
                    name="s",
                    trigger_kind="cron",
                    expression="* * * * *",
                    timezone="UTC",
                    executor="local",
                    target=RECORD,
                    arguments={},
                    timeout_s=300,
                    enabled=True,
                    state="idle",
                    claim_seq=0,
                    bucket=0,
                    retries=0,
                    retry_backoff_s=10,
                    created_at=now,
                    updated_at=now,
                )
            ).inserted_primary_key[0]
            conn.execute(
                insert(runs).values(
                    schedule_id=schedule_id,
                    scheduled_for=now,
                    attempt=1,
                    status="cancelled",
                    error="cancelled: the next fire came due",
                    finished_at=now + timedelta(seconds=1),
                )
            )
            # The constraint still refuses what is no status.
            with pytest.raises(Exception, match=r"(?i)check|constraint"), conn.begin_nested():
                conn.execute(text("UPDATE tickwork_runs SET status = 'paused'"))
        with engine.begin() as conn:
            migrations.downgrade(conn, "0006")
            assert conn.execute(select(runs.c.status, runs.c.error)).one() == (
                "abandoned",
                "cancelled (status removed by a downgrade)",
            )
        with engine.begin() as conn:
            migrations.upgrade(conn, "0007")
            assert migrations.current_revision(conn) == "0007"
    finally:
        engine.dispose()
