"""The local executor's worker pool: every task is reported exactly once — returned, raised,
cancelled before it started, or still queued when the pool shut down."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from tests.support.local_helpers import WAIT_S
from tickwork_local.pool import Pool, PoolShutDown


class Reports:
    def __init__(self) -> None:
        self.seen: dict[str, BaseException | None] = {}
        self.cond = threading.Condition()

    def for_(self, key: str) -> Callable[[BaseException | None], None]:
        def report(exc: BaseException | None) -> None:
            with self.cond:
                assert key not in self.seen, f"{key} reported twice"
                self.seen[key] = exc
                self.cond.notify_all()

        return report

    def wait(self, *keys: str) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: all(k in self.seen for k in keys), WAIT_S), self.seen


def test_a_task_reports_its_return_or_its_exception() -> None:
    pool = Pool(2, "test-pool")
    pool.start()
    reports = Reports()
    try:
        pool.submit(lambda: None, reports.for_("ok"))
        pool.submit(lambda: 1 / 0, reports.for_("boom"))
        reports.wait("ok", "boom")
    finally:
        pool.shutdown()
    assert reports.seen["ok"] is None
    assert isinstance(reports.seen["boom"], ZeroDivisionError)


def test_a_cancelled_task_never_runs_and_a_started_one_cannot_be_cancelled() -> None:
    pool = Pool(1, "test-pool")
    pool.start()
    gate, started = threading.Event(), threading.Event()
    ran: list[str] = []
    reports = Reports()
    try:
        first = pool.submit(lambda: (started.set(), gate.wait(WAIT_S)), reports.for_("first"))
        second = pool.submit(lambda: ran.append("second"), reports.for_("second"))
        assert started.wait(WAIT_S)
        assert first.started and not pool.cancel(first)
        assert pool.cancel(second) and pool.cancel(second)
        gate.set()
        reports.wait("first")
    finally:
        pool.shutdown()
    assert ran == [] and "second" not in reports.seen


def test_shutdown_without_wait_reports_queued_tasks_as_not_run() -> None:
    pool = Pool(1, "test-pool")
    pool.start()
    gate, started = threading.Event(), threading.Event()
    reports = Reports()
    pool.submit(lambda: (started.set(), gate.wait(WAIT_S)), reports.for_("running"))
    for n in range(3):
        pool.submit(lambda: None, reports.for_(f"queued{n}"))
    assert started.wait(WAIT_S)
    pool.shutdown(wait=False)
    reports.wait("queued0", "queued1", "queued2")
    assert all(isinstance(reports.seen[f"queued{n}"], PoolShutDown) for n in range(3))
    gate.set()
    reports.wait("running")
    with pytest.raises(RuntimeError, match="not running"):
        pool.submit(lambda: None, reports.for_("late"))
