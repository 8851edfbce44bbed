"""``tickwork.calls.ReportOnce``, the once-only ``on_done`` every executor wraps: exactly one
report whichever of a run's end, its soft timeout and a shutdown come first, from any thread."""

from __future__ import annotations

import logging
import threading

import pytest

from tickwork.plugin.calls import ReportOnce
from tickwork.structures import Outcome, RunStatus

THREADS = 8
ROUNDS = 200


def race(once: ReportOnce) -> list[bool]:
    """Every thread reports at the same moment; what each call returned."""
    start = threading.Barrier(THREADS)
    won: list[bool] = []

    def report(status: RunStatus) -> None:
        start.wait()
        won.append(once(Outcome(status)))

    statuses = [RunStatus.SUCCEEDED if n % 2 else RunStatus.TIMED_OUT for n in range(THREADS)]
    threads = [threading.Thread(target=report, args=(status,)) for status in statuses]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return won


def test_of_many_threads_reporting_at_once_exactly_one_reports() -> None:
    for _ in range(ROUNDS):
        seen: list[Outcome] = []
        once = ReportOnce(seen.append, run_id=7)
        assert sorted(race(once)) == [False] * (THREADS - 1) + [True]
        assert len(seen) == 1 and once.done


def test_a_failing_on_done_is_logged_and_still_counts_as_the_report(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[Outcome] = []

    def on_done(outcome: Outcome) -> None:
        calls.append(outcome)
        raise RuntimeError("listener broke")

    once = ReportOnce(on_done, run_id=42)
    assert not once.done
    with caplog.at_level(logging.ERROR, logger="tickwork.calls"):
        assert once(Outcome(RunStatus.SUCCEEDED)) is True
    assert once(Outcome(RunStatus.FAILED)) is False
    assert len(calls) == 1 and once.done
    assert "on_done callback raised for run 42" in caplog.text
