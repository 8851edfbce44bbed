"""Run as a script by tests/plugins/celerybeat/test_import_django_celery_beat.py: creates django-celery-beat's tables
with its own migrations (``migrate``) in the database given by ``$DJANGO_DB`` (a JSON object of
Django's DATABASES["default"]), writes periodic tasks through its models, and prints, as JSON,
Celery's own next fire times of every crontab task from each start instant in ``$STARTS``. The
import under test reads the tables with SQL alone, in another process without Django."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import django
from django.conf import settings

if json.loads(os.environ["DJANGO_DB"])["ENGINE"] == "django.db.backends.mysql":
    import pymysql  # Django's MySQL backend on PyMySQL (tickwork's mysql extra), not mysqlclient

    pymysql.install_as_MySQLdb()

settings.configure(
    SECRET_KEY="tickwork-tests",
    USE_TZ=True,
    TIME_ZONE="UTC",
    INSTALLED_APPS=["django_celery_beat"],
    DATABASES={"default": json.loads(os.environ["DJANGO_DB"])},
    DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
)
django.setup()

from django.core.management import call_command  # noqa: E402 - after django.setup()
from django_celery_beat.models import (  # noqa: E402
    ClockedSchedule,
    CrontabSchedule,
    IntervalSchedule,
    PeriodicTask,
    SolarSchedule,
)

from tests.support.celerybeat_helpers import celery_times  # noqa: E402

call_command("migrate", verbosity=0)
PAST = datetime(2025, 1, 1, 0, 0, 7, tzinfo=UTC)

report = CrontabSchedule.objects.create(
    minute="30", hour="7", day_of_week="mon-fri", day_of_month="*", month_of_year="*", timezone="Europe/Oslo"
)
first_friday = CrontabSchedule.objects.create(
    minute="0", hour="9", day_of_week="fri", day_of_month="1-7", month_of_year="*", timezone="America/New_York"
)
quarters = CrontabSchedule.objects.create(
    minute="*/15", hour="9-17", day_of_week="*", day_of_month="*", month_of_year="*/3", timezone="UTC"
)
nightly = CrontabSchedule.objects.create(
    minute="0", hour="3", day_of_week="*", day_of_month="*", month_of_year="*", timezone="UTC"
)
PeriodicTask.objects.create(
    name="weekday report",
    task="proj.tasks.report",
    crontab=report,
    args='[1, "a"]',
    kwargs='{"full": true}',
    queue="reports",
    routing_key="reports.daily",
    priority=5,
    expire_seconds=600,
    headers='{"origin": "beat"}',
)
PeriodicTask.objects.create(name="first friday", task="proj.tasks.ff", crontab=first_friday)
PeriodicTask.objects.create(name="quarters", task="proj.tasks.q", crontab=quarters, start_time=PAST)
PeriodicTask.objects.create(
    name="sync",
    task="proj.tasks.sync",
    interval=IntervalSchedule.objects.create(every=90, period="minutes"),
    start_time=PAST,
)
PeriodicTask.objects.create(
    name="launch",
    task="proj.tasks.launch",
    clocked=ClockedSchedule.objects.create(clocked_time=datetime(2030, 1, 1, 12, 0, tzinfo=UTC)),
    one_off=True,
)
PeriodicTask.objects.create(name="once tonight", task="proj.tasks.tonight", crontab=nightly, one_off=True)
PeriodicTask.objects.create(name="paused", task="proj.tasks.paused", crontab=nightly, enabled=False)
PeriodicTask.objects.create(
    name="expired", task="proj.tasks.old", crontab=nightly, expires=datetime(2020, 1, 1, tzinfo=UTC)
)
PeriodicTask.objects.create(
    name="until 2099", task="proj.tasks.new", crontab=nightly, expires=datetime(2099, 1, 1, tzinfo=UTC)
)
if os.environ.get("REFUSED"):
    PeriodicTask.objects.create(
        name="sunrise",
        task="proj.tasks.sun",
        solar=SolarSchedule.objects.create(event="sunrise", latitude=59.9, longitude=10.7),
    )
    PeriodicTask.objects.create(
        name="later", task="proj.tasks.later", crontab=nightly, start_time=datetime(2099, 1, 1, tzinfo=UTC)
    )
    PeriodicTask.objects.create(name="garbled", task="proj.tasks.g", crontab=nightly, kwargs="{not json")
    bad = CrontabSchedule.objects.create(minute="5", hour="*", timezone="UTC")
    PeriodicTask.objects.create(name="bad crontab", task="proj.tasks.b", crontab=bad)
    # Edited by hand in SQL (save() would refuse it): what Celery cannot parse, beat cannot run.
    CrontabSchedule.objects.filter(pk=bad.pk).update(minute="every 5")

starts = [datetime.fromisoformat(s) for s in json.loads(os.environ["STARTS"])]
times = {
    task.name: [[t.isoformat() for t in celery_times(task.schedule, start)] for start in starts]
    for task in PeriodicTask.objects.filter(crontab__isnull=False, one_off=False).exclude(name="bad crontab")
}
print(json.dumps(times))
