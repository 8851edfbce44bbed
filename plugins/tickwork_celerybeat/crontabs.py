"""Celery's ``crontab`` as a tickwork trigger expression.

Celery fires a crontab when **every** field matches: day of month *and* day of week. Cron (and
tickwork's ``cron`` trigger, which follows Vixie cron) fires when *either* restricted day field
matches. So a crontab that restricts only one of the two day fields (or neither) becomes a
``cron`` expression, and one that restricts both becomes a ``calendar`` (systemd) expression,
whose weekday and date parts combine with AND exactly as Celery's do.

The fields are read from the sets Celery parsed (``crontab.minute`` and so on), so every spelling
Celery accepts (``*/15``, ``mon-fri``, ``1,15``) is translated from what Celery itself understood.
"""

from __future__ import annotations

from dataclasses import dataclass

MINUTES = range(60)
HOURS = range(24)
DAYS_OF_WEEK = range(7)  # Celery and cron: 0 is Sunday
DAYS_OF_MONTH = range(1, 32)
MONTHS = range(1, 13)
#: systemd's weekday names, Celery's day numbers as the index.
WEEKDAY_NAMES = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")


@dataclass(frozen=True)
class CrontabFields:
    """The values of a crontab's five fields, as Celery parsed them."""

    minute: frozenset[int]
    hour: frozenset[int]
    day_of_week: frozenset[int]
    day_of_month: frozenset[int]
    month_of_year: frozenset[int]

    @classmethod
    def of(cls, crontab: object) -> CrontabFields:
        """The fields of a ``celery.schedules.crontab``."""
        return cls(
            minute=frozenset(getattr(crontab, "minute")),  # noqa: B009 - a Celery object, untyped
            hour=frozenset(getattr(crontab, "hour")),  # noqa: B009
            day_of_week=frozenset(getattr(crontab, "day_of_week")),  # noqa: B009
            day_of_month=frozenset(getattr(crontab, "day_of_month")),  # noqa: B009
            month_of_year=frozenset(getattr(crontab, "month_of_year")),  # noqa: B009
        )


def _full(values: frozenset[int], domain: range) -> bool:
    return values >= frozenset(domain)


def _ranges(values: frozenset[int], dash: str, width: int) -> str:
    """Runs of consecutive values as ranges (``1-5`` / ``01..05``), others listed, sorted."""
    ordered = sorted(values)
    parts: list[str] = []
    start = previous = ordered[0]
    for value in [*ordered[1:], None]:
        if value is not None and value == previous + 1:
            previous = value
            continue
        first, last = f"{start:0{width}d}", f"{previous:0{width}d}"
        parts.append(first if start == previous else f"{first}{dash}{last}")
        if value is not None:
            start = previous = value
    return ",".join(parts)


def _cron_field(values: frozenset[int], domain: range) -> str:
    """``*`` for every value (so that a day field is unrestricted), else ranges and values."""
    return "*" if _full(values, domain) else _ranges(values, "-", 1)


def _calendar_field(values: frozenset[int], domain: range) -> str:
    return "*" if _full(values, domain) else _ranges(values, "..", 2)


def translate(fields: CrontabFields) -> tuple[str, str]:
    """``(kind, expression)`` firing at the times the crontab fires, in the same time zone.

    :raises ValueError: for a crontab that can never fire (an empty field)
    """
    for name in ("minute", "hour", "day_of_week", "day_of_month", "month_of_year"):
        if not getattr(fields, name):
            raise ValueError(f"crontab field {name} matches no value")
    both_days = not _full(fields.day_of_month, DAYS_OF_MONTH) and not _full(fields.day_of_week, DAYS_OF_WEEK)
    if not both_days:
        return "cron", " ".join(
            (
                _cron_field(fields.minute, MINUTES),
                _cron_field(fields.hour, HOURS),
                _cron_field(fields.day_of_month, DAYS_OF_MONTH),
                _cron_field(fields.month_of_year, MONTHS),
                _cron_field(fields.day_of_week, DAYS_OF_WEEK),
            )
        )
    # Both day fields restricted: systemd's weekday and date parts must both match (AND).
    weekdays = ",".join(WEEKDAY_NAMES[d] for d in sorted(fields.day_of_week))
    months = _calendar_field(fields.month_of_year, MONTHS)
    days = _calendar_field(fields.day_of_month, DAYS_OF_MONTH)
    hours = _calendar_field(fields.hour, HOURS)
    minutes = _calendar_field(fields.minute, MINUTES)
    return "calendar", f"{weekdays} *-{months}-{days} {hours}:{minutes}:00"
