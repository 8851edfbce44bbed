"""``tickwork import django-celery-beat URL``: django-celery-beat's tables, created by its own
migrations (Django's ``migrate``) on SQLite and on scratch PostgreSQL and MySQL/MariaDB databases, read with SQL
alone by a ``tickwork`` process in which Django cannot even be imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import make_url

from tests.support.celerybeat_helpers import REPO, stored, tickwork_times, tw

STARTS = [datetime(2026, 5, 4, 5, 0, tzinfo=UTC), datetime(2026, 8, 31, 21, 59, tzinfo=UTC)]
CONFIG = '[store]\nplugin = "sqlite"\npath = "t.db"\n\n[executor.celery]\napp = "proj.celery:app"\n'
#: Guards against a hung process; not a timing assertion.
PROCESS_TIMEOUT_S = 300


def make_tables(database: dict[str, Any], *, refused: bool = False) -> dict[str, list[list[datetime]]]:
    """Migrate and fill the Django database; Celery's fire times of its crontab tasks by name."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "DJANGO_DB": json.dumps(database),
        "STARTS": json.dumps([s.isoformat() for s in STARTS]),
        "REFUSED": "1" if refused else "",
    }
    done = subprocess.run(
        [sys.executable, str(REPO / "tests" / "support" / "django_beat_project.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr
    return {
        name: [[datetime.fromisoformat(t) for t in times] for times in per_start]
        for name, per_start in json.loads(done.stdout).items()
    }


@pytest.fixture(params=["sqlite", "postgres", "mysql"])
def django_db(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[dict[str, Any], str]:
    """Django's DATABASES entry and the URL the import reads, of a fresh database."""
    if request.param == "sqlite":
        path = tmp_path / "django.sqlite3"
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path)}, f"sqlite:///{path}"
    url = make_url(request.getfixturevalue(f"{request.param}_url"))
    database = {
        "ENGINE": f"django.db.backends.{'postgresql' if request.param == 'postgres' else 'mysql'}",
        "NAME": url.database,
        "USER": url.username or "",
        "PASSWORD": url.password or "",
        "HOST": url.host or "",
        "PORT": str(url.port or ""),
    }
    return database, url.set(drivername=url.get_backend_name()).render_as_string(hide_password=False)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A tickwork project whose ``import django`` fails: the import must not need Django."""
    (tmp_path / "tickwork.toml").write_text(CONFIG)
    (tmp_path / "nodjango" / "django").mkdir(parents=True)
    (tmp_path / "nodjango" / "django" / "__init__.py").write_text('raise ImportError("tickwork imported Django")\n')
    return tmp_path


def run_import(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return tw(workdir, "import", "django-celery-beat", *args, extra_path=(workdir / "nodjango",))


def test_the_periodic_tasks_become_schedules_that_fire_when_beat_would(
    django_db: tuple[dict[str, Any], str], workdir: Path
) -> None:
    database, url = django_db
    reference = make_tables(database)
    done = run_import(workdir, url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("imported 9 schedules from django-celery-beat at ")
    assert "expired: expired at 2020-01-01T00:00:00Z: imported disabled" in done.stderr
    assert "until 2099: expires 2099-01-01T00:00:00Z: each message expires then" in done.stderr
    schedules = stored(workdir)
    assert set(reference) == {"weekday report", "first friday", "quarters", "paused", "expired", "until 2099"}
    for name, per_start in reference.items():
        for start, celery in zip(STARTS, per_start, strict=True):
            assert tickwork_times(schedules[name], start) == celery, (name, start)
    assert schedules["first friday"]["kind"] == "calendar"  # day of month AND day of week
    assert schedules["first friday"]["timezone"] == "America/New_York"
    assert schedules["weekday report"]["arguments"] == {
        "args": [1, "a"],
        "kwargs": {"full": True},
        "options": {
            "queue": "reports",
            "routing_key": "reports.daily",
            "priority": 5,
            "expires": 600,
            "headers": {"origin": "beat"},
        },
    }
    assert all(s["executor"] == "celery" for s in schedules.values())
    assert schedules["until 2099"]["arguments"]["options"] == {"expires": "2099-01-01T00:00:00Z"}
    # An interval starts at its start_time and keeps its period.
    sync = tickwork_times(schedules["sync"], datetime(2024, 12, 31, tzinfo=UTC), 3)
    start = datetime(2025, 1, 1, 0, 0, 7, tzinfo=UTC)
    assert sync == [start, start + timedelta(minutes=90), start + timedelta(minutes=180)]
    # One-off tasks fire once: a clocked one at its time, a crontab one at its next fire.
    assert (schedules["launch"]["kind"], schedules["launch"]["expression"]) == ("once", "2030-01-01T12:00:00Z")
    tonight = schedules["once tonight"]
    assert tonight["kind"] == "once"
    fire = datetime.fromisoformat(tonight["expression"].replace("Z", "+00:00"))
    assert (fire.hour, fire.minute) == (3, 0) and fire == datetime.fromisoformat(tonight["next_fire"])
    enabled = {name: s["enabled"] for name, s in schedules.items()}
    assert enabled == {name: name not in ("paused", "expired") for name in schedules}


def test_solar_and_a_future_start_time_are_refused_by_name_and_skip_leaves_them_out(
    tmp_path: Path, workdir: Path
) -> None:
    path = tmp_path / "django.sqlite3"
    make_tables({"ENGINE": "django.db.backends.sqlite3", "NAME": str(path)}, refused=True)
    assert tw(workdir, "db", "upgrade").returncode == 0
    done = run_import(workdir, f"sqlite:///{path}")
    assert done.returncode == 2
    assert "4 entries cannot be imported; nothing was imported" in done.stderr
    assert "entry 'bad crontab': Celery cannot parse its crontab" in done.stderr
    assert "entry 'garbled': kwargs is not valid JSON" in done.stderr
    assert "entry 'sunrise': solar schedules" in done.stderr
    assert "entry 'later': start_time 2099-01-01T00:00:00Z is in the future" in done.stderr
    assert stored(workdir) == {}
    skips = [word for name in ("sunrise", "later", "garbled", "bad crontab") for word in ("--skip", name)]
    dry = run_import(workdir, f"sqlite:///{path}", *skips, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert len(dry.stdout.splitlines()) == 9
    assert stored(workdir) == {}
    skipped = run_import(workdir, f"sqlite:///{path}", *skips)
    assert skipped.returncode == 0, skipped.stderr
    assert len(stored(workdir)) == 9
    again = run_import(workdir, f"sqlite:///{path}", *skips, "--replace", "--json")
    assert again.returncode == 0, again.stderr
    assert sorted(json.loads(line)["name"] for line in again.stdout.splitlines()) == sorted(stored(workdir))
    assert len(stored(workdir)) == 9


def test_a_database_without_the_tables_or_that_does_not_exist_is_one_error_line(tmp_path: Path, workdir: Path) -> None:
    missing = run_import(workdir, f"sqlite:///{tmp_path / 'nothere.sqlite3'}")
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    assert not (tmp_path / "nothere.sqlite3").exists()
    (tmp_path / "empty.sqlite3").write_bytes(b"")
    empty = run_import(workdir, f"sqlite:///{tmp_path / 'empty.sqlite3'}")
    assert empty.returncode == 1 and "django_celery_beat_periodictask" in empty.stderr
    assert len(empty.stderr.strip().splitlines()) == 1
