"""Looking up, caching and querying triggers by kind."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .abc import Trigger
from .errors import TriggerError
from .plugins import PluginManager, default_manager


def detect_kind(expression: str, manager: PluginManager | None = None) -> str:
    """Return the kind of the first registered trigger that recognises ``expression``.

    :raises tickwork.errors.TriggerError: if no trigger recognises it
    """
    manager = manager or default_manager()
    for kind, cls in manager.triggers:
        if cls.recognizes(expression):
            return kind
    raise TriggerError(
        f"cannot tell the kind of {expression!r}; give it explicitly (one of: {', '.join(manager.triggers.names())})"
    )


@lru_cache(maxsize=1024)
def check_zone(tz: str) -> None:
    """:raises tickwork.errors.TriggerError: naming ``tz`` if it is not an IANA time zone"""
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise TriggerError(f"unknown IANA zone {tz!r} (expected a name such as 'Europe/Berlin' or 'UTC')") from None


@lru_cache(maxsize=65536)
def _compile(cls: type[Trigger], expression: str, tz: str) -> Trigger:
    return cls(expression, tz)


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
