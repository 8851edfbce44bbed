"""A backfill never runs a fire early (issue #40): a range reaching past now is capped to the
database clock's now, saying so; a range that starts at or after now is refused; the store refuses
a future time whoever asks (the store contract's ``test_a_backfill_never_queues_a_fire_time_after_now``).

Before the fix, ``jobs backfill NAME --from <1 s ago> --to <40 s ahead>`` queued the future fire
times and a node ran them at once, 3.6-23.6 s before their time."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

import tickwork
from tickwork.cli import main
from tickwork.errors import ConfigError
from tickwork.structures import iso_z, parse_iso


def test_a_range_reaching_past_now_is_capped_to_the_database_clock(
    sqlite_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with tickwork.connect() as admin:
        admin.add("every-second", "* * * * * *", "tests.support.jobs_for_tests:record")
        now = admin.store().now()
        report = admin.backfill("every-second", now - timedelta(seconds=5), now + timedelta(seconds=40))
        assert report.capped_to is not None and now <= report.capped_to <= admin.store().now()
        assert report.queued and all(t < report.capped_to for t in report.queued)
        assert len(report.times) <= 6  # the 5 s before now, not the 40 s after
        assert report.as_json()["capped_to"] == iso_z(report.capped_to)
    capsys.readouterr()
    later = iso_z(now + timedelta(seconds=40))
    start = iso_z(now - timedelta(seconds=3))
    assert main(["jobs", "backfill", "every-second", "--from", start, "--to", later, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "--to capped at now (" in out and "a backfill never runs a fire early" in out
    assert main(["jobs", "backfill", "every-second", "--from", start, "--to", later, "--json"]) == 0
    queued = json.loads(capsys.readouterr().out)
    capped = parse_iso(queued["capped_to"])
    assert queued["queued"] and all(parse_iso(t) < capped for t in queued["queued"])


def test_a_range_in_the_future_is_refused(sqlite_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with tickwork.connect() as admin:
        admin.add("hourly", "0 * * * *", "tests.support.jobs_for_tests:record")
        now = admin.store().now()
        with pytest.raises(ConfigError, match="is not in the past"):
            admin.backfill("hourly", now + timedelta(hours=1), now + timedelta(days=7))
        assert admin.store().take_backfills("n1", limit=10, buckets=None) == []
    capsys.readouterr()
    start, end = iso_z(now + timedelta(hours=1)), iso_z(now + timedelta(days=7))
    assert main(["jobs", "backfill", "hourly", "--from", start, "--to", end]) == 2
    assert "is not in the past (database clock:" in capsys.readouterr().err
