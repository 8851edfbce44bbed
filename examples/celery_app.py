"""A Celery app with a beat schedule, for docs/celery.md: ``tickwork import celery-beat
examples.celery_app:app --dry-run`` shows what tickwork makes of each entry."""

from __future__ import annotations

from datetime import timedelta

from celery import Celery
from celery.schedules import crontab

app = Celery("proj", broker="amqp://guest:guest@localhost:5672//")
app.conf.timezone = "Europe/Oslo"
app.conf.beat_schedule = {
    # Weekdays at 07:30 Oslo time, to the "reports" queue; the message expires after 10 minutes.
    "weekday-report": {
        "task": "proj.tasks.report",
        "schedule": crontab(hour=7, minute=30, day_of_week="mon-fri"),
        "args": (1, "a"),
        "kwargs": {"full": True},
        "options": {"queue": "reports", "expires": 600},
    },
    # The first Friday of each month: Celery's day of month AND day of week.
    "first-friday": {"task": "proj.tasks.invoice", "schedule": crontab(0, 9, day_of_month="1-7", day_of_week="fri")},
    # Every 90 minutes.
    "sync": {"task": "proj.tasks.sync", "schedule": timedelta(minutes=90)},
}
