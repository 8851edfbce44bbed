"""Looking up, caching and querying triggers by kind."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from ..abc import Trigger
from ..errors import TriggerError, did_you_mean
from ..plugin.manager import PluginManager, default_manager


def detect_kind(expression: str, manager: PluginManager | None = None) -> str:
    """Return the kind of the first registered trigger that recognises ``expression``.

    :raises tickwork.errors.TriggerError: if no trigger recognises it
    """
    manager = manager or default_manager()
    for kind, cls in manager.triggers:
        if cls.recognizes(expression):
            return kind
    fields = expression.split()
    if "cron" in manager.triggers and len(fields) >= 2 and all(_CRON_FIELD.fullmatch(f) for f in fields):
        raise TriggerError(
            f"{expression!r} looks like cron but has {len(fields)} fields; cron takes 5 (minute hour "
            f"day-of-month month day-of-week), 6 (seconds first) or 7 (seconds first, year last)"
        )
    raise TriggerError(
        f"cannot tell the kind of {expression!r}; give it explicitly (one of: {', '.join(manager.triggers.names())})"
    )


#: One field of what looks like a cron expression: numbers, ``* ? / , - L W #`` and month or
#: weekday names (so that "every 5 minutes" is not taken for cron).
_CRON_FIELD = re.compile(
    r"(?:[0-9*?/,\-LW#]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun)+",
    re.IGNORECASE,
)

#: The shortest time between two fires of a schedule, in seconds, whatever its trigger kind.
MIN_PERIOD = 1.0
#: Consecutive fires sampled when checking a trigger's period.
PERIOD_SAMPLES = 60


def _shown(expression: str) -> str:
    return repr(expression if len(expression) <= 60 else expression[:57] + "...")


@lru_cache(maxsize=1024)
def check_zone(tz: str) -> None:
    """:raises tickwork.errors.TriggerError: naming ``tz`` if it is not an IANA time zone"""
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        hint = did_you_mean(tz, available_timezones()) if isinstance(tz, str) else ""
        raise TriggerError(
            f"unknown IANA zone {tz!r}{hint} (expected a name such as 'Europe/Berlin' or 'UTC')"
        ) from None


@lru_cache(maxsize=65536)
def _compile(cls: type[Trigger], expression: str, tz: str) -> Trigger:
    try:
        return cls(expression, tz)
    except TriggerError:
        raise
    except (ValueError, OverflowError, ArithmeticError) as exc:
        # A trigger's own checks missed it (e.g. a 5,000-digit number): still one clear line.
        raise TriggerError(f"{cls.kind}: invalid expression {_shown(expression)}: {exc}") from None


def get_trigger(kind: str, expression: str, tz: str = "UTC", manager: PluginManager | None = None) -> Trigger:
    """Return the (cached) compiled trigger for ``expression`` of ``kind`` in zone ``tz``.

    :raises tickwork.errors.PluginNotFoundError: if ``kind`` is not registered
    :raises tickwork.errors.TriggerError: if the expression is invalid
    """
    cls = (manager or default_manager()).triggers.get(kind)
    return _compile(cls, expression, tz)


def next_fire_times(
    expression: str,
    *,
    kind: str | None = None,
    tz: str | None = None,
    after: datetime | None = None,
    n: int = 1,
) -> list[datetime]:
    """Return the next ``n`` fire times of ``expression`` strictly after ``after`` (default: now).

    :param kind: trigger kind; recognised from the expression when omitted
    :param tz: IANA zone the expression is evaluated in (default UTC)
    :param after: aware datetime; a naive one is taken as UTC
    :return: aware UTC datetimes, fewer than ``n`` if the trigger stops firing
    :raises tickwork.errors.TriggerError: if the expression is invalid
    """
    if n < 0:
        raise ValueError(f"n: must be >= 0, got {n}")
    trigger = get_trigger(kind or detect_kind(expression), expression, tz or "UTC")
    current = after or datetime.now(UTC)
    if current.tzinfo is None:
        current = current.replace(tzinfo=UTC)
    out: list[datetime] = []
    for _ in range(n):
        nxt = trigger.next_after(current)
        if nxt is None:
            break
        out.append(nxt)
        current = nxt
    return out


def check_period(trigger: Trigger, after: datetime, samples: int = PERIOD_SAMPLES) -> None:
    """Refuse a trigger that fires less than :data:`MIN_PERIOD` apart, judged on ``samples``
    consecutive fires after ``after`` (a sub-second pattern shows within its first few fires).
    A trigger that passed is not sampled again in this process: a module declaring 20,000 jobs
    with a few distinct expressions spent three quarters of its import time here.

    :raises tickwork.errors.TriggerError: naming two fires that are too close
    """
    if _period_passed.get(trigger, 0) >= samples:
        return
    _sample_period(trigger, after, samples)
    if len(_period_passed) > 65536:
        _period_passed.clear()
    _period_passed[trigger] = samples


#: Triggers that passed :func:`check_period`, with the number of fires sampled.
_period_passed: dict[Trigger, int] = {}


#: Where :func:`_sample_period` looks for a first fire of a trigger with none after now: one
#: that fired in the past (a ``once`` time gone by) is kept, one that never can is refused.
_BEGINNING = datetime(1970, 1, 1, tzinfo=UTC)


def check_fires(trigger: Trigger) -> None:
    """Refuse a trigger that can never fire (``0 2 31 2 *``: 31 February). One whose fire times
    are all in the past (a ``once`` time gone by) passes: it did fire.

    :raises tickwork.errors.TriggerError: saying why
    """
    if trigger.next_after(_BEGINNING) is None:
        raise TriggerError(
            f"{trigger.kind} {_shown(trigger.expression)} never fires: no date matches it "
            f"(is a day of the month past the end of every month it allows?)"
        )


def _sample_period(trigger: Trigger, after: datetime, samples: int) -> None:
    previous = trigger.next_after(after)
    if previous is None:
        check_fires(trigger)
    for _ in range(samples):
        if previous is None:
            return
        nxt = trigger.next_after(previous)
        if nxt is not None and (nxt - previous).total_seconds() < MIN_PERIOD:
            raise TriggerError(
                f"{trigger.kind} {_shown(trigger.expression)} fires less than {MIN_PERIOD:g} s apart "
                f"({previous.isoformat()} and {nxt.isoformat()}); schedules fire at most once a second"
            )
        previous = nxt


def checked_period(trigger: Trigger, after: datetime) -> Trigger:
    """``trigger`` once :func:`check_period` passed for it on 10 fires (once per trigger and
    process: the engine calls this for every fire, so a schedule stored before the rule existed
    is parked instead of writing a history row per microsecond)."""
    check_period(trigger, after, samples=10)
    return trigger
