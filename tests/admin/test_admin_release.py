"""``Admin.release``: the schedule's hand-offs no worker started end ``cancelled``, the history
row naming who released them; nothing waiting is an empty answer (SQLite, through the admin API
and the store's public methods, as a node writes a hand-off)."""

from __future__ import annotations

from pathlib import Path

import pytest

import tickwork
from tickwork.errors import ScheduleNotFoundError
from tickwork.structures import Finish, Outcome, RunStatus


def test_release_names_who_released_and_leaves_nothing_waiting(tmp_path: Path) -> None:
    with tickwork.connect({"store": {"path": str(tmp_path / "t.db")}}) as admin:
        admin.add("report", "0 0 1 1 *", "tests.support.jobs_for_tests:record")
        admin.trigger("report")
        store = admin.store(write=True)
        (claim,) = store.claim_due("n1", limit=1, buckets=None)
        assert store.finish("n1", [Finish(claim, Outcome(RunStatus.SUBMITTED), None)]) == [True]

        (released,) = admin.release("report", by="carol")
        assert released.id == claim.run_id and released.status is RunStatus.CANCELLED
        (row,) = admin.history(schedule="report")
        assert row.status is RunStatus.CANCELLED and (row.error or "").startswith("released by carol: ")
        assert admin.release("report", by="carol") == []
        with pytest.raises(ScheduleNotFoundError):
            admin.release("no-such-schedule")
