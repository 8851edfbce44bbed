"""The hand-off core without workers: fire identity, headers, option checks, and the executor's
outcomes in an embedded node (a Celery app on an in-process transport, and on a closed port)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import tickwork
from tickwork.errors import ConfigError, ExecutorError
from tickwork.structures import JobCall, RunStatus
from tickwork_celery import executor as celery_executor
from tickwork_celery import links
from tickwork_celery.executor import CeleryExecutor, task_name
from tickwork_dramatiq.executor import DramatiqExecutor
from tickwork_handoff import identity
from tickwork_handoff.executor import Message
from tickwork_rq.executor import RQExecutor, function_path

T = datetime(2026, 11, 26, 3, 0, tzinfo=UTC)


def test_the_message_id_is_the_fires_identity() -> None:
    first = identity.message_id("report", T, 1)
    assert identity.message_id("report", T, 1) == first  # a publish retried for the same attempt
    assert len({first, identity.message_id("report", T, 2), identity.message_id("other", T, 1)}) == 3


def test_headers_carry_the_run_context() -> None:
    call = JobCall(run_id=7, schedule="report", scheduled_for=T, target="m:f", arguments={}, timeout=5, attempt=2,
                   node_id="n1")  # fmt: skip
    headers = identity.headers(call)
    assert all(isinstance(v, str) for v in headers.values())
    assert identity.context_of(headers) == tickwork.RunContext("report", T, 7, 2, "n1")
    assert identity.context_of(None) is None and identity.context_of({"other": "1"}) is None
    assert identity.context_of({**headers, identity.ATTEMPT: "x"}) is None


def test_targets_become_the_queues_names() -> None:
    assert task_name("proj.tasks.report") == "proj.tasks.report"
    assert task_name("missing.module:report") == "missing.module.report"
    assert function_path("proj.tasks:report") == "proj.tasks.report"
    # @tickwork.cron under @app.task declares module:function; the node sends the task's name.
    assert task_name("tests.support.handoff.local_app:declared") == "handoff.declared"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: CeleryExecutor(app="proj"), 'app: expected "module:attribute", e.g. "proj.celery:app"'),
        (lambda: CeleryExecutor(app="a:b", priority=300), "priority"),
        (lambda: CeleryExecutor(app="a:b", report_timeout=-1), "report_timeout"),
        (lambda: RQExecutor(url="http://x"), "url: expected a redis:// URL, got 'http'://"),
        (lambda: DramatiqExecutor(broker="proj"), 'broker: expected "module:attribute", e.g. "proj.broker:broker"'),
        (lambda: DramatiqExecutor(broker="a:b", threads=0), "threads"),
    ],
)
def test_options_are_checked(make: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make()


def test_arguments_must_survive_json() -> None:
    with pytest.raises(ExecutorError, match="not JSON-serialisable"):
        CeleryExecutor(app="a:b").validate_target("proj.tasks.report", {"when": T})


def _node(tmp_path: Path, app: str, **options: object) -> tickwork.Node:
    return tickwork.Node.from_config(
        {
            "scheduler": {"node_id": "n1"},
            "store": {"plugin": "sqlite", "path": str(tmp_path / "t.db")},
            "executor": {"celery": {"app": app, **options}},
        }
    )


def _statuses(node: tickwork.Node) -> list[tuple[RunStatus, str | None]]:
    return [(r.status, r.error) for r in reversed(node.store.history(limit=100, schedule="s"))]


def test_no_new_hand_off_while_one_is_pending_until_report_timeout(tmp_path: Path) -> None:
    node = _node(tmp_path, "tests.support.handoff.local_app:memory", report_timeout=2.5)
    with node:
        node.admin.add("s", "* * * * * *", "proj.tasks.report", executor="celery")
        # Waits for the outcome instead of a fixed time: under CI's four workers a fixed 5.5 s
        # was once too short for the first timeout and the next hand-off to be recorded.
        deadline = time.monotonic() + 30
        while True:
            statuses = _statuses(node)
            kinds = [s for s, _ in statuses]
            handed = kinds.count(RunStatus.TIMED_OUT) + kinds.count(RunStatus.SUBMITTED)
            if (RunStatus.SKIPPED in kinds and handed >= 2) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    # Nothing consumes the in-process queue: the first hand-off blocks the next ones until it
    # times out, then the next fire is handed off.
    assert statuses[0] == (RunStatus.TIMED_OUT, "no report from the queue's worker within report_timeout = 2.5s")
    kinds = [s for s, _ in statuses]
    assert RunStatus.SKIPPED in kinds and kinds.count(RunStatus.TIMED_OUT) + kinds.count(RunStatus.SUBMITTED) >= 2
    assert all(
        error is not None and error.startswith("previous hand-off") for s, error in statuses if s is RunStatus.SKIPPED
    )


def test_a_publish_that_fails_is_a_failed_attempt_with_the_brokers_error(tmp_path: Path) -> None:
    node = _node(tmp_path, "tests.support.handoff.local_app:unreachable", publish_timeout=1)
    with node:
        node.admin.add("s", "* * * * * *", "proj.tasks.report", executor="celery")
        time.sleep(3.5)
        assert node.running
        statuses = _statuses(node)
    # Every attempt that ended failed with the broker's error (fires due while one was being
    # refused are skipped by the engine as usual); none was recorded handed off.
    ended = [(s, error) for s, error in statuses if s not in (RunStatus.RUNNING, RunStatus.SKIPPED)]
    assert ended and all(s is RunStatus.FAILED for s, _ in ended), statuses
    assert all((error or "").startswith("not handed off: OperationalError") for _, error in ended), statuses


def test_fires_of_one_schedule_handed_off_together_pass_one_at_a_time(tmp_path: Path) -> None:
    """A backfill with ``overlap = "allow"`` hands several fires of one schedule to the executor at
    once (one publishing batch, or a few): the hand-off rule still lets one through at a time,
    the later ones skipped behind it, whichever batch each fell in."""
    node = _node(tmp_path, "tests.support.handoff.local_app:memory", report_timeout=3600)
    with node:
        node.admin.add("s", "0 * * * *", "proj.tasks.report", executor="celery")
        now = node.store.now()
        report = node.admin.backfill("s", now - timedelta(hours=6), now, overlap="allow")
        assert len(report.queued) >= 5, report
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            statuses = _statuses(node)
            if len(statuses) == len(report.queued) and RunStatus.RUNNING not in [s for s, _ in statuses]:
                break
            time.sleep(0.1)
    kinds = [s for s, _ in statuses]
    assert kinds.count(RunStatus.SUBMITTED) == 1, statuses
    assert kinds.count(RunStatus.SKIPPED) == len(report.queued) - 1, statuses
    assert all((e or "").startswith("previous hand-off") for s, e in statuses if s is RunStatus.SKIPPED), statuses


def _messages(count: int) -> list[Message]:
    common = {"scheduled_for": T, "target": "proj.tasks.report", "arguments": {}, "timeout": 5, "node_id": "n1"}
    calls = [JobCall(run_id=i, schedule=f"s{i}", attempt=1, **common) for i in range(count)]
    return [Message(call, identity.message_id_of(call), identity.headers(call)) for call in calls]


@pytest.mark.parametrize("failures", [1, 2])
def test_a_connection_that_breaks_while_it_is_made_is_made_once_more(
    monkeypatch: pytest.MonkeyPatch, failures: int
) -> None:
    """The other publishing thread's broken batch can close this thread's connection while it is
    being opened: nothing of the batch was written, so it is tried once more, as a broken batch
    is; a second failure fails the batch with the broker's error."""
    made: list[int] = []

    class Flaky(links.Link):
        def __init__(self, app: Any) -> None:
            made.append(1)
            if len(made) <= failures:
                raise OSError("Server unexpectedly closed connection")
            super().__init__(app)

    monkeypatch.setattr(celery_executor, "Link", Flaky)
    executor = CeleryExecutor(app="tests.support.handoff.local_app:memory", publish_timeout=5)
    executor.connect()
    try:
        results = executor.publish(_messages(3))
    finally:
        executor.disconnect()
    assert len(made) == 2
    if failures == 1:
        assert all(isinstance(r, str) and r.startswith("celery task proj.tasks.report") for r in results), results
    else:
        assert [str(r) for r in results] == ["Server unexpectedly closed connection"] * 3
