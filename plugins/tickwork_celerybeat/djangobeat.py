"""django-celery-beat's PeriodicTask rows as :class:`Imported` schedules.

The decisions (docs/celery.md spells them out for users):

* crontab -> ``cron`` or ``calendar`` (:mod:`.crontabs`) in the crontab's own zone; interval ->
  ``interval`` anchored where beat's rhythm stands (``start_time``, else ``last_run_at``, else
  ``date_changed``), so that it keeps its phase; clocked -> ``once``; solar -> refused.
* ``one_off`` -> ``once`` at the schedule's next fire after now (or after ``start_time``); one
  that already ran is imported disabled.
* ``start_time`` in the future: the interval anchor is that time; a crontab is refused (tickwork
  has no start bound). In the past it changes nothing.
* ``expires`` in the past: imported disabled (beat disables it at that time). In the future, and
  ``expire_seconds``: the ``expires`` option of each message, as beat sends it.
* ``queue``, ``exchange``, ``routing_key``, ``priority`` and ``headers`` become the options.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from .crontabs import CrontabFields, translate
from .djangotables import PERIODS, Row, aware
from .durations import interval_expression
from .entries import Imported, Refusals

#: ``(kind, expression, tz, after) -> the next fire after "after"``: the tickwork trigger's.
NextFire = Callable[[str, str, str, datetime], datetime | None]


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _json(task: dict[str, Any], column: str, what: type) -> Any:
    """The JSON text of ``column``, an array (``list``) or an object (``dict``); empty is empty."""
    kind = "array" if what is list else "object"
    try:
        value = json.loads(task[column] or ("[]" if what is list else "{}"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{column} is not valid JSON: {exc}") from exc
    if not isinstance(value, what):
        raise ValueError(f"{column} must be a JSON {kind}, got {type(value).__name__}")
    return value


def _trigger(row: Row, now: datetime) -> tuple[str, str, str]:
    """``(kind, expression, zone)`` of the row's schedule.

    :raises ValueError: for a schedule tickwork cannot reproduce
    """
    task = row.task
    start = aware(task["start_time"])
    if row.solar is not None:
        solar = row.solar
        raise ValueError(
            f"solar schedules ({solar['event']} at {solar['latitude']}, {solar['longitude']}) have no tickwork "
            "trigger; leave the task out with --skip and keep it elsewhere"
        )
    if row.clocked is not None:
        clocked = aware(row.clocked["clocked_time"])
        assert clocked is not None
        return "once", _iso(clocked), "UTC"
    if row.crontab is not None:
        from celery.schedules import crontab

        cron = row.crontab
        if start is not None and start > now and not task["one_off"]:
            raise ValueError(
                f"start_time {_iso(start)} is in the future and tickwork has no start bound for a crontab; "
                "import it after that time, clear start_time, or leave it out with --skip"
            )
        from celery.schedules import ParseException

        try:
            fields = CrontabFields.of(
                crontab(
                    minute=cron["minute"],
                    hour=cron["hour"],
                    day_of_week=cron["day_of_week"],
                    day_of_month=cron["day_of_month"],
                    month_of_year=cron["month_of_year"],
                )
            )
        except (ParseException, ValueError) as exc:  # ParseException is no ValueError; beat could not run it
            raise ValueError(f"Celery cannot parse its crontab: {exc}") from exc
        kind, expression = translate(fields)
        return kind, expression, str(cron["timezone"] or "UTC")
    if row.interval is not None:
        period = row.interval["period"]
        if period not in PERIODS:
            raise ValueError(f"unknown interval period {period!r}")
        anchor = start or aware(task["last_run_at"]) or aware(task["date_changed"])
        seconds = round(int(row.interval["every"]) * PERIODS[period], 6)
        return "interval", interval_expression(seconds, _iso(anchor) if anchor else None), "UTC"
    raise ValueError("the task has no schedule (interval, crontab, clocked or solar)")


def _options(task: dict[str, Any], now: datetime) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for key in ("queue", "exchange", "routing_key", "priority"):
        if task[key] not in (None, ""):
            options[key] = task[key]
    expires = aware(task["expires"])
    if expires is not None and expires > now:
        options["expires"] = _iso(expires)
    elif expires is None and task["expire_seconds"]:
        options["expires"] = int(task["expire_seconds"])
    headers = _json(task, "headers", dict)
    if headers:
        options["headers"] = headers
    return options


def imported(row: Row, now: datetime, next_fire: NextFire) -> Imported:
    """The schedule of one PeriodicTask, as of ``now`` (the tickwork database's clock).

    :raises ValueError: for a task tickwork cannot reproduce, saying why
    """
    task = row.task
    kind, expression, zone = _trigger(row, now)
    enabled = bool(task["enabled"])
    notes: list[str] = []
    expires = aware(task["expires"])
    if expires is not None and expires <= now and enabled:
        enabled = False
        notes.append(f"expired at {_iso(expires)}: imported disabled, as beat disables it")
    elif expires is not None and expires > now:
        notes.append(
            f"expires {_iso(expires)}: each message expires then, as beat sends it, but tickwork keeps firing "
            "after it; disable or remove the schedule then"
        )
    if task["one_off"] and kind != "once":
        start = aware(task["start_time"])
        after = start if start is not None and start > now else now
        first = next_fire(kind, expression, zone, after)
        if first is None:
            raise ValueError(f"one_off: its {kind} schedule {expression!r} never fires again")
        kind, expression, zone = "once", _iso(first), "UTC"
    if task["one_off"] and task["total_run_count"] and enabled:
        enabled = False
        notes.append("one_off and already run: imported disabled, as beat disables it")
    elif kind == "once" and enabled and next_fire(kind, expression, zone, now) is None:
        notes.append(
            f"its time {expression} has passed and beat has not run it: beat would run it at once, "
            f"tickwork never will; run it with tickwork jobs trigger if it is still wanted"
        )
    return Imported(
        name=str(task["name"]),
        kind=kind,
        expression=expression,
        tz=zone,
        task=str(task["task"]),
        args=_json(task, "args", list),
        kwargs=_json(task, "kwargs", dict),
        options=_options(task, now),
        enabled=enabled,
        notes=tuple(notes),
    )


def read(rows: list[Row], now: datetime, next_fire: NextFire, refusals: Refusals) -> list[Imported]:
    """Every row's schedule; those tickwork cannot reproduce go to ``refusals``."""
    out = []
    for row in rows:
        try:
            out.append(imported(row, now, next_fire))
        except (ValueError, TypeError) as exc:
            refusals.add(str(row.task["name"]), str(exc))
    return out
