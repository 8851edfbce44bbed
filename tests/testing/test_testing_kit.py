"""tickwork.testing as a user and a store author use it: the harness on a fake clock, and the
store contract subclassed by a test suite outside this repository."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support import harness_jobs
from tickwork import RunStatus, ScheduleSpec, next_fire_times
from tickwork.errors import ConfigError
from tickwork.testing import FakeClock, MemoryStore, SchedulerHarness, StoreContract
from tickwork.testing import contract as contract_module
from tickwork_sqlite.store import SQLiteStore

START = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _fresh_record() -> None:
    harness_jobs.SEEN.clear()
    harness_jobs.FLAKY_FAILURES["left"] = 0


def test_an_every_10_seconds_job_runs_6_times_in_60_fake_seconds() -> None:
    harness = SchedulerHarness(jobs=[harness_jobs.tick.__module__], start=START)
    runs = harness.advance(60)  # the module's nightly job is not due in this minute
    expected = [START + timedelta(seconds=10 * i) for i in range(1, 7)]
    assert [(r.schedule, r.scheduled_for) for r in runs] == [("harness.tick", t) for t in expected]
    assert all(r.status is RunStatus.SUCCEEDED for r in runs)
    assert runs[0].result == "tick 12:00:10"
    # The job saw its own run through tickwork.current_run().
    assert [(s, t) for s, t, _ in harness_jobs.SEEN if s == "harness.tick"] == [("harness.tick", t) for t in expected]
    assert harness.clock() == START + timedelta(seconds=60)
    # The store holds the history the runs wrote.
    recorded = [r for r in harness.store.history(limit=100) if r.schedule == "harness.tick"]
    assert sorted(r.scheduled_for for r in recorded) == expected


def test_advancing_in_small_steps_runs_the_same_fires() -> None:
    harness = SchedulerHarness(jobs=[harness_jobs.tick.__module__], start=START)
    runs = [r for _ in range(12) for r in harness.advance(5) if r.schedule == "harness.tick"]
    assert [r.scheduled_for for r in runs] == [START + timedelta(seconds=10 * i) for i in range(1, 7)]


def test_a_berlin_night_job_across_the_autumn_dst_change() -> None:
    start = datetime(2026, 10, 23, 12, 0, tzinfo=UTC)
    harness = SchedulerHarness(jobs=[harness_jobs.tick.__module__], start=start)
    runs = [r for r in harness.advance(3 * 86400) if r.schedule == "harness.nightly"]
    expected = next_fire_times("30 2 * * *", kind="cron", tz="Europe/Berlin", after=start, n=3)
    assert [r.scheduled_for for r in runs] == expected
    # 02:30 Berlin is 00:30 UTC in summer time and 01:30 UTC after the change (25 Oct 2026).
    assert [t.hour for t in expected] == [0, 0, 1]


def test_a_failing_job_is_retried_after_its_backoff_on_the_fake_clock() -> None:
    harness_jobs.FLAKY_FAILURES["left"] = 2
    flaky = ScheduleSpec(
        name="flaky",
        trigger_kind="interval",
        expression="1h",
        target="tests.support.harness_jobs:flaky",
        retries=3,
        retry_backoff=timedelta(seconds=10),
    )
    harness = SchedulerHarness(jobs=[flaky], start=START)
    runs = harness.advance(3600)
    assert [(r.attempt, r.status) for r in runs] == [
        (1, RunStatus.FAILED),
        (2, RunStatus.FAILED),
        (3, RunStatus.SUCCEEDED),
    ]
    first = START + timedelta(hours=1)
    assert [r.started_at for r in runs] == [first, first + timedelta(seconds=10), first + timedelta(seconds=30)]
    assert "RuntimeError: not yet" in (runs[0].error or "")
    assert {r.scheduled_for for r in runs} == {first}


def test_the_harness_runs_on_a_store_and_clock_of_your_own() -> None:
    clock = FakeClock(START)
    store = MemoryStore(clock=clock)
    store.open()
    harness = SchedulerHarness(jobs=[harness_jobs.tick.__module__], store=store, clock=clock)
    assert len([r for r in harness.advance(30) if r.schedule == "harness.tick"]) == 3
    assert store.get("harness.tick").next_fire == START + timedelta(seconds=40)


def test_the_harness_drives_a_sql_store_on_the_fake_clock(tmp_path: Path) -> None:
    """The SQL store reads the harness clock through its public ``clock`` seam, in the same cached
    statements it runs in production."""
    clock = FakeClock(START)
    store = SQLiteStore(str(tmp_path / "harness.db"), clock=clock)
    store.open()
    try:
        harness = SchedulerHarness(jobs=[harness_jobs.tick.__module__], store=store, clock=clock)
        first = [r.scheduled_for for r in harness.advance(30) if r.schedule == "harness.tick"]
        second = [r.scheduled_for for r in harness.advance(30) if r.schedule == "harness.tick"]
        assert first + second == [START + timedelta(seconds=10 * i) for i in range(1, 7)]
        recorded = [r for r in store.history(limit=100) if r.schedule == "harness.tick"]
        assert {r.status for r in recorded} == {RunStatus.SUCCEEDED}
        assert sorted(r.finished_at for r in recorded if r.finished_at) == first + second
    finally:
        store.close()


def test_a_target_that_cannot_be_loaded_is_named() -> None:
    bad = ScheduleSpec(
        name="bad", trigger_kind="interval", expression="1m", target="tests.support.harness_jobs:missing"
    )
    with pytest.raises(ConfigError, match=r"schedule 'bad': cannot load target 'tests.support.harness_jobs:missing'"):
        SchedulerHarness(jobs=[bad])


def test_a_third_party_suite_subclasses_the_store_contract(tmp_path: Path) -> None:
    """A plugin author's repository: outside this one, importing only the installed tickwork."""
    project = tmp_path / "my_store_tests"
    project.mkdir()
    (project / "test_my_store.py").write_text(
        textwrap.dedent(
            """
            import pytest

            from tickwork.testing import MemoryStore, StoreContract


            def fresh_store():
                store = MemoryStore()
                store.open()
                return store


            class TestMemoryStoreKeepsTheContract(StoreContract):
                @pytest.fixture
                def make_store(self):
                    return fresh_store
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_store.py"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    contract_tests = [name for name in dir(StoreContract) if name.startswith("test_")]
    assert f"{len(contract_tests)} passed" in done.stdout


def test_the_store_contract_example_runs_as_documented(tmp_path: Path) -> None:
    """The example in tickwork.testing.contract's docstring, copied into a test file as a store
    author would, with SQLiteStore as ``MyStore``."""
    doc = contract_module.__doc__ or ""
    example = textwrap.dedent(doc.split("::\n", 1)[1].split("\nThe tests use", 1)[0])
    (tmp_path / "test_documented.py").write_text("from tickwork_sqlite.store import SQLiteStore as MyStore\n" + example)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_documented.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    contract_tests = [name for name in dir(StoreContract) if name.startswith("test_")]
    assert f"{len(contract_tests)} passed" in done.stdout


def test_a_suite_that_forgets_make_store_is_told_so(tmp_path: Path) -> None:
    (tmp_path / "test_forgot.py").write_text(
        "from tickwork.testing import StoreContract\n\nclass TestForgot(StoreContract):\n    pass\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "test_forgot.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 1
    assert "a StoreContract subclass defines the make_store fixture" in done.stdout
