"""``tickwork import celery-beat MODULE:APP``: a Celery app's beat_schedule as tickwork schedules
run by the ``celery`` executor, checked against Celery's own fire times. Real ``tickwork``
processes on a real SQLite store."""

from __future__ import annotations

import json
import runpy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from celery.schedules import crontab
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.celerybeat_helpers import celery_times, stored, tickwork_times, tw
from tickwork_celerybeat.crontabs import CrontabFields, translate

APP = """
from datetime import timedelta
from celery import Celery
from celery.schedules import crontab, solar

app = Celery("proj", broker="memory://")
app.conf.timezone = "Europe/Oslo"
app.conf.beat_schedule = {
    "weekday-report": {
        "task": "proj.tasks.report",
        "schedule": crontab(hour=7, minute=30, day_of_week="mon-fri"),
        "args": (1, "a"),
        "kwargs": {"full": True},
        "options": {"queue": "reports", "priority": 5, "expires": 600},
    },
    "first-friday": {
        "task": "proj.tasks.ff",
        "schedule": crontab(minute=0, hour=9, day_of_month="1-7", day_of_week="fri"),
    },
    "office-quarters": {"task": "proj.tasks.q", "schedule": crontab(minute="*/15", hour="9-17")},
    "quarterly": {"task": "proj.tasks.quarterly", "schedule": crontab(0, 0, day_of_month="1", month_of_year="*/3")},
    "ping": {"task": "proj.tasks.ping", "schedule": 30.0},
    "sync": {"task": "proj.tasks.sync", "schedule": timedelta(minutes=90)},
}
EXTRA
"""
SOLAR = 'app.conf.beat_schedule["sunrise"] = {"task": "proj.tasks.sun", "schedule": solar("sunrise", 59.9, 10.7)}'
CONFIG = '[store]\nplugin = "sqlite"\npath = "t.db"\n\n[executor.celery]\napp = "proj.celery:app"\n'
#: Start instants of the comparison: a weekday morning, a month end, a Sunday night.
STARTS = [
    datetime(2026, 5, 4, 5, 0, tzinfo=UTC),
    datetime(2026, 8, 31, 21, 59, tzinfo=UTC),
    datetime(2026, 1, 11, 23, 45, tzinfo=UTC),
]


def write_project(root: Path, extra: str = "", config: str = CONFIG) -> Path:
    (root / "proj").mkdir(exist_ok=True)
    (root / "proj" / "__init__.py").write_text("")
    (root / "proj" / "celery.py").write_text(APP.replace("EXTRA", extra))
    (root / "tickwork.toml").write_text(config)
    return root


def beat_schedule(root: Path) -> dict[str, Any]:
    app: Celery = runpy.run_path(str(root / "proj" / "celery.py"))["app"]
    return dict(app.conf.beat_schedule)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path)


def test_the_imported_schedules_fire_when_celery_beat_would(project: Path) -> None:
    done = tw(project, "import", "celery-beat", "proj.celery:app", "--config", "tickwork.toml")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "imported 6 schedules from proj.celery:app"
    schedules = stored(project)
    entries = beat_schedule(project)
    assert set(schedules) == set(entries)
    for name, entry in entries.items():
        schedule = schedules[name]
        assert (schedule["executor"], schedule["target"]) == ("celery", entry["task"])
        when = entry["schedule"]
        if isinstance(when, crontab):
            assert schedule["timezone"] == "Europe/Oslo"
            for start in STARTS:
                assert tickwork_times(schedule, start) == celery_times(when, start), (name, start)
            # What a user checks the stored schedule with gives the same times.
            shown = tw(
                project,
                "next",
                schedule["expression"],
                "--kind",
                schedule["kind"],
                "--tz",
                schedule["timezone"],
                "--after",
                STARTS[0].isoformat(),
                "-n",
                "20",
                "--json",
            )
            assert shown.returncode == 0, shown.stderr
            fires = [json.loads(line)["fire_time"] for line in shown.stdout.splitlines()]
            assert fires == [t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in celery_times(when, STARTS[0])]
        else:
            # An interval keeps its period; its phase is the interval grid (docs/celery.md).
            times = tickwork_times(schedule, STARTS[0], 21)
            period = when if isinstance(when, timedelta) else timedelta(seconds=when)
            assert times[1:] == [t + period for t in times[:-1]]
    # Celery's day of month AND day of week: a calendar expression, the first Friday only.
    assert schedules["first-friday"]["kind"] == "calendar"
    assert schedules["weekday-report"]["kind"] == "cron"
    assert schedules["weekday-report"]["arguments"] == {
        "args": [1, "a"],
        "kwargs": {"full": True},
        "options": {"queue": "reports", "priority": 5, "expires": 600},
    }


def test_a_solar_entry_is_refused_by_name_and_nothing_is_written(tmp_path: Path) -> None:
    project = write_project(tmp_path, extra=SOLAR)
    assert tw(project, "db", "upgrade").returncode == 0
    done = tw(project, "import", "celery-beat", "proj.celery:app")
    assert done.returncode == 2
    assert "entry 'sunrise'" in done.stderr and "solar" in done.stderr and "nothing was imported" in done.stderr
    assert stored(project) == {}
    skipped = tw(project, "import", "celery-beat", "proj.celery:app", "--skip", "sunrise")
    assert skipped.returncode == 0, skipped.stderr
    assert "sunrise" not in stored(project) and len(stored(project)) == 6


def test_dry_run_writes_nothing_and_prints_a_file_jobs_add_reads(project: Path) -> None:
    dry = tw(project, "import", "celery-beat", "proj.celery:app", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert not (project / "t.db").exists()
    lines = [json.loads(line) for line in dry.stdout.splitlines()]
    assert sorted(line["name"] for line in lines) == sorted(beat_schedule(project))
    (project / "beat.jsonl").write_text(dry.stdout)
    assert tw(project, "db", "upgrade").returncode == 0
    assert tw(project, "import", "celery-beat", "proj.celery:app", "--dry-run").returncode == 0
    assert stored(project) == {}
    added = tw(project, "jobs", "add", "--from", "beat.jsonl")
    assert added.returncode == 0, added.stderr
    from_file = stored(project)
    assert sorted(from_file) == sorted(beat_schedule(project))
    for line in lines:
        assert (from_file[line["name"]]["kind"], from_file[line["name"]]["expression"]) == (
            line["kind"],
            line["expression"],
        )


def test_a_taken_name_refuses_the_import_and_replace_replaces(project: Path) -> None:
    assert tw(project, "import", "celery-beat", "proj.celery:app").returncode == 0
    assert (
        tw(
            project,
            "jobs",
            "add",
            "mine",
            "1h",
            "proj.tasks.mine",
            "--executor",
            "celery",
            "--args",
            '{"args": [], "kwargs": {}, "options": {}}',
        ).returncode
        == 0
    )
    before = stored(project)
    (project / "proj" / "celery.py").write_text(
        (project / "proj" / "celery.py").read_text().replace('crontab(minute="*/15", hour="9-17")', "crontab(minute=5)")
    )
    again = tw(project, "import", "celery-beat", "proj.celery:app")
    assert again.returncode == 1
    assert "already exist; nothing was imported" in again.stderr
    # Every taken name is named, not only the first one met.
    taken = [n for n in before if n != "mine"]
    assert len(taken) > 1 and all(repr(n) in again.stderr for n in taken), again.stderr
    assert stored(project) == before
    replaced = tw(project, "import", "celery-beat", "proj.celery:app", "--replace")
    assert replaced.returncode == 0, replaced.stderr
    after = stored(project)
    assert after["office-quarters"]["expression"] == "5 * * * *"
    assert after["mine"] == before["mine"]  # a schedule the app does not name is left alone
    assert {n: s["expression"] for n, s in after.items() if n != "office-quarters"} == {
        n: s["expression"] for n, s in before.items() if n != "office-quarters"
    }
    prefixed = tw(project, "import", "celery-beat", "proj.celery:app", "--prefix", "beat/")
    assert prefixed.returncode == 0, prefixed.stderr
    assert len(stored(project)) == 13


def test_an_executor_that_is_not_configured_is_refused_as_jobs_add_refuses_it(tmp_path: Path) -> None:
    project = write_project(tmp_path, config='[store]\nplugin = "sqlite"\npath = "t.db"\n')
    done = tw(project, "import", "celery-beat", "proj.celery:app")
    added = tw(project, "jobs", "add", "x", "1h", "proj.tasks.x", "--executor", "celery")
    assert done.returncode == added.returncode == 2
    assert not (project / "t.db").exists()  # refused before any database is created
    assert "executor 'celery' is not configured" in done.stderr
    assert done.stderr.strip().splitlines()[-1] == added.stderr.strip().splitlines()[-1]
    # A dry run previews them anyway (triggers checked), saying the import would refuse.
    dry = tw(project, "import", "celery-beat", "proj.celery:app", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert len(dry.stdout.splitlines()) == 6
    assert "executor 'celery' is not configured" in dry.stderr and "the import itself would be refused" in dry.stderr
    assert not (project / "t.db").exists()


def test_an_app_that_cannot_be_imported_is_one_error_line(project: Path) -> None:
    done = tw(project, "import", "celery-beat", "proj.nothere:app")
    assert done.returncode == 2
    assert "proj.nothere" in done.stderr and len(done.stderr.strip().splitlines()) == 1


# Crontab fields as Celery takes them: "*" or a list of values.
def _field(low: int, high: int) -> st.SearchStrategy[str]:
    values = st.lists(st.integers(low, high), min_size=1, max_size=5, unique=True)
    return st.one_of(st.just("*"), values.map(lambda v: ",".join(map(str, sorted(v)))))


@settings(max_examples=150, deadline=None)
@given(
    minute=_field(0, 59),
    hour=_field(0, 23),
    day_of_week=_field(0, 6),
    day_of_month=_field(1, 28),
    month_of_year=_field(1, 12),
    start=st.datetimes(datetime(2026, 1, 1), datetime(2030, 12, 31), timezones=st.just(UTC)),
)
def test_every_crontab_fires_when_celery_says(
    minute: str, hour: str, day_of_week: str, day_of_month: str, month_of_year: str, start: datetime
) -> None:
    # A zone without daylight saving: around DST changes Celery and tickwork differ (docs/celery.md).
    app = Celery("check", set_as_current=False)
    app.conf.timezone = "Asia/Tokyo"
    when = crontab(minute, hour, day_of_week, day_of_month, month_of_year, app=app)
    kind, expression = translate(CrontabFields.of(when))
    schedule = {"name": "x", "kind": kind, "expression": expression, "timezone": "Asia/Tokyo"}
    assert tickwork_times(schedule, start) == celery_times(when, start)


PERIODIC_TASKS = """
from celery import Celery
from celery.schedules import crontab

app = Celery("proj", broker="memory://")


@app.task
def hello(who):
    return who


@app.on_after_configure.connect
def setup(sender, **kwargs):
    sender.add_periodic_task(10.0, hello.s("world"), name="hello every 10")
    sender.add_periodic_task(crontab(hour=7, minute=30), hello.s("morning"), name="morning", queue="q1")
"""


def test_entries_added_by_add_periodic_task_are_imported(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    (project / "proj" / "celery.py").write_text(PERIODIC_TASKS)
    done = tw(project, "import", "celery-beat", "proj.celery:app")
    assert done.returncode == 0, done.stderr
    schedules = stored(project)
    assert {n: (s["kind"], s["expression"], s["timezone"], s["target"]) for n, s in schedules.items()} == {
        "hello every 10": ("interval", "10s", "UTC", "proj.celery.hello"),
        "morning": ("cron", "30 7 * * *", "UTC", "proj.celery.hello"),
    }
    assert schedules["morning"]["arguments"] == {"args": ["morning"], "kwargs": {}, "options": {"queue": "q1"}}


UNREPRODUCIBLE = """
from datetime import timedelta
from celery import Celery
from celery.schedules import schedule

app = Celery("proj", broker="memory://")
app.conf.beat_schedule = {
    "rounded": {"task": "t.a", "schedule": schedule(timedelta(hours=1), relative=True)},
    "opaque": {"task": "t.b", "schedule": 60, "args": (object(),)},
    "fine": {"task": "t.c", "schedule": 60},
}
"""


def test_every_entry_that_cannot_be_reproduced_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    (project / "proj" / "celery.py").write_text(UNREPRODUCIBLE)
    done = tw(project, "import", "celery-beat", "proj.celery:app")
    assert done.returncode == 2
    assert "2 entries cannot be imported; nothing was imported" in done.stderr
    assert "entry 'rounded': relative=True" in done.stderr
    assert "entry 'opaque': args, kwargs and options must hold JSON values only" in done.stderr
    assert "'fine'" not in done.stderr
    assert not (project / "t.db").exists() or stored(project) == {}


def test_an_app_on_local_time_is_refused(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    text = UNREPRODUCIBLE.replace("app.conf.beat_schedule", "app.conf.enable_utc = False\napp.conf.beat_schedule")
    (project / "proj" / "celery.py").write_text(text)
    done = tw(project, "import", "celery-beat", "proj.celery:app")
    assert done.returncode == 2
    assert "set app.conf.timezone" in done.stderr


def test_without_celery_the_command_is_listed_and_running_it_is_one_error_line(project: Path) -> None:
    shadow = project / "nocelery" / "celery"
    shadow.mkdir(parents=True)
    # As a missing package fails: ModuleNotFoundError naming it (the celery executor's plugin
    # registers its stand-in only for that, and re-raises any other import error).
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'celery'\", name='celery')\n")
    listed = tw(project, "--help", extra_path=(shadow.parent,))
    assert listed.returncode == 0 and "import" in listed.stdout
    done = tw(project, "import", "celery-beat", "proj.celery:app", extra_path=(shadow.parent,))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "tickwork: error: importing Celery beat schedules needs Celery, which cannot be imported "
        "(No module named 'celery'): pip install 'tickwork[celery]'"
    ]
