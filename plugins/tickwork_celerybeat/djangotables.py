"""django-celery-beat's tables, read with SQLAlchemy Core: no Django, no Django settings.

The table and column names are those django-celery-beat's migrations create (app label
``django_celery_beat``); only the columns the import uses are declared. Django writes datetimes
in UTC when ``USE_TZ`` is on (the default since Django 5.0); a naive value read back (SQLite,
MySQL) is taken as UTC.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    URL,
    BigInteger,
    Boolean,
    Column,
    Connection,
    DateTime,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    select,
)
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from tickwork.errors import ConfigError, TickworkError
from tickwork.sql import dburl

metadata = MetaData()

periodic_task = Table(
    "django_celery_beat_periodictask",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(200)),
    Column("task", String(200)),
    Column("interval_id", BigInteger),
    Column("crontab_id", BigInteger),
    Column("solar_id", BigInteger),
    Column("clocked_id", BigInteger),
    Column("args", Text),
    Column("kwargs", Text),
    Column("queue", String(200)),
    Column("exchange", String(200)),
    Column("routing_key", String(200)),
    Column("headers", Text),
    Column("priority", Integer),
    Column("expires", DateTime(timezone=True)),
    Column("expire_seconds", Integer),
    Column("one_off", Boolean),
    Column("start_time", DateTime(timezone=True)),
    Column("enabled", Boolean),
    Column("last_run_at", DateTime(timezone=True)),
    Column("total_run_count", Integer),
    Column("date_changed", DateTime(timezone=True)),
)
crontab_schedule = Table(
    "django_celery_beat_crontabschedule",
    metadata,
    Column("id", BigInteger, primary_key=True),
    Column("minute", String(240)),
    Column("hour", String(96)),
    Column("day_of_week", String(64)),
    Column("day_of_month", String(124)),
    Column("month_of_year", String(64)),
    Column("timezone", String(63)),
)
interval_schedule = Table(
    "django_celery_beat_intervalschedule",
    metadata,
    Column("id", BigInteger, primary_key=True),
    Column("every", Integer),
    Column("period", String(24)),
)
clocked_schedule = Table(
    "django_celery_beat_clockedschedule",
    metadata,
    Column("id", BigInteger, primary_key=True),
    Column("clocked_time", DateTime(timezone=True)),
)
solar_schedule = Table(
    "django_celery_beat_solarschedule",
    metadata,
    Column("id", BigInteger, primary_key=True),
    Column("event", String(24)),
    Column("latitude", Float),
    Column("longitude", Float),
)

#: IntervalSchedule.period -> seconds.
PERIODS = {"days": 86400.0, "hours": 3600.0, "minutes": 60.0, "seconds": 1.0, "microseconds": 1e-6}
#: Drivers pinned per database (those tickwork's own extras install).
DRIVERS = {
    "sqlite": "pysqlite",
    "postgresql": "psycopg",
    "postgres": "psycopg",
    "mysql": "pymysql",
    "mariadb": "pymysql",
}


@dataclass(frozen=True)
class Row:
    """One PeriodicTask with its schedule's columns (``None`` for the schedule kinds it has not)."""

    task: dict[str, Any]
    crontab: dict[str, Any] | None
    interval: dict[str, Any] | None
    clocked: dict[str, Any] | None
    solar: dict[str, Any] | None


def parse_url(url: str) -> URL:
    """The SQLAlchemy URL of the Django database, its driver pinned.

    :raises tickwork.errors.ConfigError: an unsupported database
    :raises tickwork.errors.TickworkError: a SQLite file that does not exist (reading must not
        create one)
    """
    parsed = dburl.parse(url, "URL", "sqlite:///PATH, postgresql://user:password@host/db or mysql://...")
    backend = parsed.get_backend_name()
    if backend not in DRIVERS:
        raise ConfigError(f"URL: unsupported database {backend!r}; expected sqlite, postgresql or mysql")
    if backend == "sqlite" and not (parsed.database and Path(parsed.database).is_file()):
        raise TickworkError(f"the SQLite database {dburl.masked(parsed)} does not exist")
    backend = "postgresql" if backend == "postgres" else "mysql" if backend == "mariadb" else backend
    return parsed.set(drivername=f"{backend}+{DRIVERS[backend]}")


def aware(value: datetime | None) -> datetime | None:
    """``value`` in UTC; a naive one is UTC (what Django stores with ``USE_TZ``)."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@contextmanager
def connected(url: URL) -> Iterator[Connection]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            yield conn
    except SQLAlchemyError as exc:
        # The driver's message, not the URL: it may hold the password.
        raise TickworkError(
            f"reading django-celery-beat's tables from {dburl.masked(url)}: {getattr(exc, 'orig', None) or exc}"
        ) from exc
    finally:
        engine.dispose()


def read_rows(url: URL) -> list[Row]:
    """Every PeriodicTask, by name, joined to its schedule (one ``SELECT`` per table)."""
    with connected(url) as conn:
        tasks = [dict(r._mapping) for r in conn.execute(select(periodic_task).order_by(periodic_task.c.name))]
        schedules = {
            table.name: {r.id: dict(r._mapping) for r in conn.execute(select(table))}
            for table in (crontab_schedule, interval_schedule, clocked_schedule, solar_schedule)
        }
    return [
        Row(
            task=task,
            crontab=schedules[crontab_schedule.name].get(task["crontab_id"]),
            interval=schedules[interval_schedule.name].get(task["interval_id"]),
            clocked=schedules[clocked_schedule.name].get(task["clocked_id"]),
            solar=schedules[solar_schedule.name].get(task["solar_id"]),
        )
        for task in tasks
    ]
