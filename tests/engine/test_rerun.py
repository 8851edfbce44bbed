"""``on_abandon = "rerun"`` on one process: a fire abandoned because its node died mid-run (the
node's claim released as a dead node's is) runs again on the engine as attempt 2 with the same
fire time, inside its misfire grace and its retry budget; a ``skip`` schedule beside it does not.
On the real SQLite store and the real local executor, with the database clock stepped by hand;
the SchedulerHarness keeps the same rule. The cluster test is tests/system/test_rerun_cluster.py."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support import jobs_for_tests as jobs
from tests.support.engines import add, make_engine, runs, step
from tests.support.stores import T0
from tickwork.cli import main
from tickwork.engine import Engine
from tickwork.errors import StoreError
from tickwork.sql.store import SQLStore
from tickwork.structures import Claim, RunStatus, ScheduleSpec, rerun_attempts, rerun_refusal
from tickwork.testing import FakeClock, SchedulerHarness
from tickwork_sqlite.store import SQLiteStore

FIRE = T0 + timedelta(minutes=1)


@pytest.fixture(autouse=True)
def _reset_jobs() -> Iterator[None]:
    jobs.calls.clear()
    yield


@pytest.fixture
def engine(sqlite_store: SQLStore, clock: FakeClock) -> Iterator[Engine]:
    eng, executor = make_engine(sqlite_store, clock, lookahead=0.0)
    yield eng
    executor.shutdown(wait=False)
    eng.membership.stop()


def die_mid_run(store: SQLStore, clock: FakeClock, *names: str) -> None:
    """At the fire time, node ``dead`` claims ``names`` and starts them; then it is declared dead."""
    clock.set(FIRE)
    claimed = store.claim_due("dead", limit=100, buckets=None)
    assert sorted(c.spec.name for c in claimed) == sorted(names)
    assert all(c.run_id is not None for c in claimed)
    clock.advance(5)
    assert store.release_node("dead", "node dead is dead (no heartbeat)") == len(names)


def history(store: SQLStore, name: str) -> list[tuple[int, RunStatus, str | None]]:
    return [(r.attempt, r.status, r.node) for r in runs(store) if r.schedule == name]


def test_an_abandoned_fire_runs_again_as_attempt_2_and_a_skip_one_does_not(
    engine: Engine, sqlite_store: SQLStore, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    add(sqlite_store, "record_attempt", on_abandon="rerun")
    add(sqlite_store, "record", name="skipper")
    die_mid_run(sqlite_store, clock, "record_attempt", "skipper")
    with caplog.at_level(logging.WARNING):
        step(engine)
    assert jobs.calls == [f"{FIRE.isoformat()} attempt 2"]  # the same fire, a further attempt; skipper not run
    assert history(sqlite_store, "record_attempt") == [(1, RunStatus.ABANDONED, "dead"), (2, RunStatus.SUCCEEDED, "n1")]
    assert history(sqlite_store, "skipper") == [(1, RunStatus.ABANDONED, "dead")]
    assert f"the fire at {FIRE.isoformat()} was abandoned with its node; running it again as attempt 2" in caplog.text
    # Both move on to their next fire; the rerun is not run a third time.
    for name in ("record_attempt", "skipper"):
        assert sqlite_store.get(name).next_fire == FIRE + timedelta(minutes=1)
    clock.advance(30)
    step(engine)
    assert len(jobs.calls) == 1


def test_past_its_misfire_grace_it_stays_abandoned_and_says_why(
    engine: Engine, sqlite_store: SQLStore, clock: FakeClock
) -> None:
    add(sqlite_store, "record_attempt", on_abandon="rerun", misfire_grace=timedelta(seconds=8))
    die_mid_run(sqlite_store, clock, "record_attempt")  # released 5 s after the fire time
    clock.advance(4)  # claimed again 9 s after it: beyond the schedule's own 8 s
    step(engine)
    assert jobs.calls == []
    [row] = [r for r in runs(sqlite_store) if r.schedule == "record_attempt"]
    assert row.status is RunStatus.ABANDONED
    assert (
        row.error
        == "node dead is dead (no heartbeat); not rerun: 9.0s past its fire time, beyond its misfire grace of 8s"
    )
    assert sqlite_store.get("record_attempt").next_fire == FIRE + timedelta(minutes=1)


def test_the_node_default_grace_applies_without_the_schedules_own(sqlite_store: SQLStore, clock: FakeClock) -> None:
    engine, executor = make_engine(sqlite_store, clock, lookahead=0.0, misfire_grace=60.0)
    try:
        add(sqlite_store, "record_attempt", on_abandon="rerun")
        die_mid_run(sqlite_store, clock, "record_attempt")
        clock.advance(40)  # 45 s late: beyond the default 30 s, within this node's 60 s
        step(engine)
        assert jobs.calls == [f"{FIRE.isoformat()} attempt 2"]
    finally:
        executor.shutdown(wait=False)
        engine.membership.stop()


def test_a_rerun_counts_against_the_retry_budget(engine: Engine, sqlite_store: SQLStore, clock: FakeClock) -> None:
    add(sqlite_store, "boom", on_abandon="rerun", retries=2, retry_backoff=timedelta(0))
    die_mid_run(sqlite_store, clock, "boom")
    for _ in range(5):
        step(engine)
    # 1 + retries attempts in all: the abandoned one, the rerun, one retry.
    assert [(a, s) for a, s, _ in history(sqlite_store, "boom")] == [
        (1, RunStatus.ABANDONED),
        (2, RunStatus.FAILED),
        (3, RunStatus.FAILED),
    ]
    assert rerun_attempts(2) == 3 and rerun_attempts(0) == 2  # retries = 0 still allows one rerun


def test_the_refusals_read_as_documented() -> None:
    assert rerun_refusal(attempt=1, late=3.0, grace=30.0, max_attempt=2) is None
    assert rerun_refusal(attempt=2, late=3.0, grace=30.0, max_attempt=2) == (
        "not rerun: attempt 2 was the last the retry budget allows (2 attempts)"
    )
    assert rerun_refusal(attempt=1, late=30.5, grace=30.0, max_attempt=2) == (
        "not rerun: 30.5s past its fire time, beyond its misfire grace of 30s"
    )


def test_the_harness_reruns_an_abandoned_fire() -> None:
    spec = ScheduleSpec(
        name="report",
        trigger_kind="cron",
        expression="* * * * *",
        target="tests.support.jobs_for_tests:record_attempt",
        on_abandon="rerun",
    )
    with SchedulerHarness([spec], start=T0) as harness:
        harness.clock.set(FIRE)
        [claim] = harness.store.claim_due("dead", limit=10, buckets=None)
        assert harness.store.release_node("dead", "node dead is dead") == 1
        ran = harness.advance(1)
    assert [(r.schedule, r.scheduled_for, r.attempt, r.status) for r in ran] == [
        ("report", claim.scheduled_for, 2, RunStatus.SUCCEEDED)
    ]


def test_jobs_show_and_list_json_say_it(sqlite_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["jobs", "add", "report", "0 3 * * *", "tests.support.jobs_for_tests:record", "--on-abandon", "rerun"])
        == 0
    )
    assert main(["jobs", "add", "charge", "0 4 * * *", "tests.support.jobs_for_tests:record"]) == 0
    capsys.readouterr()
    assert main(["jobs", "show", "report"]) == 0
    assert "on abandon:  rerun (a fire abandoned with its node runs again)" in capsys.readouterr().out
    assert main(["jobs", "show", "charge"]) == 0
    assert "on abandon" not in capsys.readouterr().out  # the default is not spelled out
    assert main(["--json", "jobs", "list"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]  # one object a line
    listed = {row["name"]: row["on_abandon"] for row in rows}
    assert listed == {"report": "rerun", "charge": "skip"}
    assert main(["jobs", "update", "report", "--on-abandon", "skip"]) == 0
    with pytest.raises(SystemExit) as refused:  # not one of the choices: a usage error
        main(["jobs", "update", "report", "--on-abandon", "twice"])
    assert refused.value.code == 2
    assert "argument --on-abandon: invalid choice: 'twice'" in capsys.readouterr().err


class OnceUnreachable(SQLiteStore):
    """The real SQLite store whose first ``start_rerun`` fails as a database outage does."""

    failures = 1

    def start_rerun(self, node_id: str, claim: Claim, *, grace: float, max_attempt: int) -> Claim | None:
        if self.failures:
            self.failures -= 1
            raise StoreError("the database is unreachable")
        return super().start_rerun(node_id, claim, grace=grace, max_attempt=max_attempt)


def test_a_store_error_opening_the_rerun_leaves_it_to_the_reconcile(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = OnceUnreachable(str(tmp_path / "tickwork.db"), clock=clock)
    store.upgrade()
    store.open()
    engine, executor = make_engine(store, clock, lookahead=0.0)
    try:
        add(store, "record_attempt", on_abandon="rerun")
        die_mid_run(store, clock, "record_attempt")
        with caplog.at_level(logging.WARNING):
            step(engine)
        assert "cannot open the rerun of an abandoned fire now (the database is unreachable)" in caplog.text
        # Neither run nor parked nor moved on: still held, untracked, until the reconcile gives it back.
        assert jobs.calls == [] and store.get("record_attempt").fault is None
        assert store.get("record_attempt").next_fire == FIRE
        assert engine.reconcile() == 1
        step(engine)
        assert jobs.calls == [f"{FIRE.isoformat()} attempt 2"]
        assert history(store, "record_attempt") == [(1, RunStatus.ABANDONED, "dead"), (2, RunStatus.SUCCEEDED, "n1")]
    finally:
        executor.shutdown(wait=False)
        engine.membership.stop()
        store.close()
