"""Concurrent runs in one process (docs/triggers.md#overlap): the engine on a real SQLite store
and a fake clock admits ``allow`` fires up to ``max_concurrent`` and records the rest skipped
with the reason while the schedule keeps firing; ``SchedulerHarness`` honours a concurrency key
held by another node; the options' checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support import jobs_for_tests as jobs
from tests.support.engines import add, make_engine
from tests.support.paths import REPO
from tests.support.stores import T0
from tickwork.engine.loop import Engine
from tickwork.sql.store import SQLStore
from tickwork.structures import Admission, Finish, Outcome, RunStatus, ScheduleSpec, ScheduleState
from tickwork.testing import FakeClock, MemoryStore, SchedulerHarness

SECOND = timedelta(seconds=1)


@pytest.fixture
def engine(sqlite_store: SQLStore, clock: FakeClock) -> Iterator[Engine]:
    jobs.calls.clear()
    jobs.gate.clear()
    eng, executor = make_engine(sqlite_store, clock, lookahead=0.0)
    yield eng
    jobs.gate.set()
    executor.shutdown(wait=True)
    eng.membership.stop()


def fire_at(engine: Engine, clock: FakeClock, seconds: int) -> None:
    """Move the clock to T0 + ``seconds``, run a pass, and write the ends it gathered."""
    clock.set(T0 + seconds * SECOND)
    while engine.tick():
        pass
    engine.drain(0)


def history(store: SQLStore) -> list[tuple[int, str, str | None]]:
    rows = sorted(store.history(limit=1000), key=lambda r: (r.scheduled_for, r.id))
    return [(int((r.scheduled_for - T0).total_seconds()), r.status.value, r.error) for r in rows]


def test_the_engine_runs_allow_fires_alongside_up_to_max_concurrent(
    engine: Engine, sqlite_store: SQLStore, clock: FakeClock
) -> None:
    add(sqlite_store, "blocked", "* * * * * *", overlap="allow", max_concurrent=2)
    fire_at(engine, clock, 1)
    fire_at(engine, clock, 2)  # the first run goes on: the second starts alongside it
    fire_at(engine, clock, 3)
    assert history(sqlite_store) == [
        (1, "running", None),
        (2, "running", None),
        (3, "skipped", "max_concurrent 2 reached"),
    ]
    schedule = sqlite_store.get("blocked")
    assert schedule.state is ScheduleState.IDLE and schedule.next_fire == T0 + 4 * SECOND
    jobs.gate.set()  # both runs end; their ends are written against their own rows
    engine.drain(5)
    fire_at(engine, clock, 4)
    engine.drain(5)
    assert history(sqlite_store) == [
        (1, "succeeded", None),
        (2, "succeeded", None),
        (3, "skipped", "max_concurrent 2 reached"),
        (4, "succeeded", None),
    ]
    assert jobs.calls == ["blocked"] * 3
    for run in sqlite_store.history(limit=10):
        if run.status is RunStatus.SUCCEEDED:
            assert run.started_at is not None and run.finished_at is not None
            assert run.scheduled_for <= run.started_at <= run.finished_at


def test_a_concurrency_key_in_the_engine_skips_a_fire_while_another_schedule_runs(
    engine: Engine, sqlite_store: SQLStore, clock: FakeClock
) -> None:
    add(sqlite_store, "blocked", "1 0 0 * * *", concurrency_key="billing")  # once, at 00:00:01
    add(sqlite_store, "record", "* * * * * *", concurrency_key="billing")
    fire_at(engine, clock, 1)
    statuses = {r.schedule: (r.status, r.error) for r in sqlite_store.history(limit=10)}
    # Claimed in one batch, in fire time and then id order: "blocked" runs, "record" may not.
    assert statuses == {
        "blocked": (RunStatus.RUNNING, None),
        "record": (RunStatus.SKIPPED, "concurrency key billing at its limit 1"),
    }
    assert sqlite_store.get("record").next_fire == T0 + 2 * SECOND
    jobs.gate.set()
    engine.drain(5)
    fire_at(engine, clock, 2)
    engine.drain(5)
    assert jobs.calls == ["blocked", "record"]
    record = sorted((r.scheduled_for, r.status) for r in sqlite_store.history(schedule="record", limit=10))
    assert record == [(T0 + SECOND, RunStatus.SKIPPED), (T0 + 2 * SECOND, RunStatus.SUCCEEDED)]


def test_the_harness_honours_a_key_held_by_another_node() -> None:
    store = MemoryStore()
    store.open()
    with SchedulerHarness(store=store) as harness:
        store.clock = harness.clock  # the store reads the harness's fake clock
        keyed = ScheduleSpec("b", "cron", "* * * * *", "tests.support.jobs_for_tests:record", concurrency_key="billing")
        harness.add(keyed, jobs.record)
        other = ScheduleSpec("a", "cron", "0 0 1 1 *", "m:f", concurrency_key="billing")
        store.add(other, None)
        store.fire_now("a")
        [held] = store.claim_due("elsewhere", limit=1, buckets=None)
        assert store.admit("elsewhere", Admission(held, release=False)) is None
        [refused] = harness.advance(60)
        assert (refused.status, refused.error) == (RunStatus.SKIPPED, "concurrency key billing at its limit 1")
        # Its run ends elsewhere: the next fire runs.
        assert store.finish("elsewhere", [Finish(held, Outcome(RunStatus.SUCCEEDED), None)]) == [True]
        [ran] = harness.advance(60)
        assert ran.status is RunStatus.SUCCEEDED and ran.schedule == "b"


def test_the_harness_runs_every_fire_of_an_allow_schedule_once() -> None:
    spec = ScheduleSpec(
        "a", "cron", "* * * * *", "tests.support.jobs_for_tests:record", overlap="allow", max_concurrent=1
    )
    with SchedulerHarness([spec]) as harness:
        ran = harness.advance(5 * 60)
        assert [r.status for r in ran] == [RunStatus.SUCCEEDED] * 5
        assert len({r.scheduled_for for r in ran}) == 5
        assert {r.status for r in harness.store.history(limit=100)} == {RunStatus.SUCCEEDED}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"overlap": "replace"}, "overlap: one of skip, buffer_one, buffer_all, cancel_other, allow"),
        ({"overlap": "allow", "max_concurrent": 0}, "max_concurrent: must be an integer from 1"),
        ({"concurrency_key": "  "}, "concurrency_key: a non-empty name"),
        ({"concurrency_key": "k", "concurrency_limit": 0}, "concurrency_limit: must be an integer from 1"),
    ],
)
def test_the_concurrency_options_are_checked(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ScheduleSpec("a", "cron", "* * * * *", "m:f", **fields)  # type: ignore[arg-type]


def test_jobs_add_show_and_list_through_the_command(tmp_path: Path) -> None:
    def tickwork(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "tickwork.cli", *args],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(REPO), "TICKWORK_CONFIG": ""},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done

    tickwork("db", "upgrade")
    tickwork("jobs", "add", "wide", "* * * * *", "tests.support.jobs_for_tests:record", "--overlap", "allow")
    tickwork("jobs", "update", "wide", "--max-concurrent", "3", "--concurrency-key", "billing")
    shown = tickwork("jobs", "show", "wide").stdout
    assert "allow (at most 3 at once; not retried)" in shown
    assert "key billing, at most 1 at once" in shown
    [listed] = [json.loads(line) for line in tickwork("jobs", "list", "--json").stdout.splitlines()]
    assert {k: listed[k] for k in ("overlap", "max_concurrent", "concurrency_key", "concurrency_limit")} == {
        "overlap": "allow",
        "max_concurrent": 3,
        "concurrency_key": "billing",
        "concurrency_limit": None,
    }
