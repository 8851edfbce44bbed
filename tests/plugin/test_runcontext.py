"""tickwork.current_run(): set only inside a run, frozen, per thread/task."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

import tickwork
from tickwork.plugin.runcontext import running

CTX = tickwork.RunContext("backup", datetime(2026, 1, 1, tzinfo=UTC), run_id=7, attempt=1, node_id="n1")


def test_outside_a_run_it_raises_lookup_error() -> None:
    with pytest.raises(LookupError, match="outside a tickwork run"):
        tickwork.current_run()


def test_inside_running_it_returns_the_context_and_resets_after() -> None:
    with running(CTX):
        assert tickwork.current_run() is CTX
    with pytest.raises(LookupError):
        tickwork.current_run()


def test_other_threads_do_not_see_it() -> None:
    seen: list[object] = []

    def look() -> None:
        try:
            seen.append(tickwork.current_run())
        except LookupError as exc:
            seen.append(exc)

    with running(CTX):
        t = threading.Thread(target=look)
        t.start()
        t.join()
    assert isinstance(seen[0], LookupError)


def test_fields_are_validated() -> None:
    with pytest.raises(ValueError, match="scheduled_for"):
        tickwork.RunContext("x", datetime(2026, 1, 1), run_id=1, attempt=1, node_id="n")
    with pytest.raises(ValueError, match="attempt"):
        tickwork.RunContext("x", datetime(2026, 1, 1, tzinfo=UTC), run_id=1, attempt=0, node_id="n")
