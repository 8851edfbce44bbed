"""Reading command-line text into values: times, ages, counts, statuses, durations (the
``type=`` of ``argparse`` options). A bad value is a usage error (exit 2) naming the option."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from ..scheduling.durations import DurationError, seconds_in
from ..scheduling.localtime import read_when
from ..scheduling.options import positive_seconds
from ..structures import RunStatus, parse_iso


def parse_time(text: str) -> datetime:
    """An ISO-8601 date-time (UTC without an offset)."""
    try:
        return parse_iso(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {text!r}") from None


def parse_local(text: str) -> datetime | timedelta:
    """``jobs backfill --from/--to``: an ISO-8601 time, or an age such as ``2h``, ``3d``
    (returned as a timedelta: that long before the database's clock). A time without an offset
    is returned naive: the command reads it in the schedule's zone
    (:func:`tickwork.scheduling.localtime.in_zone`)."""
    try:
        return read_when(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time or an age like 30m, 2h, 3d: {text!r}") from None


def parse_since(text: str) -> datetime | timedelta:
    """``--since``/``--until``: an ISO-8601 time, or an age such as ``90s``, ``15m``, ``1h``, ``2d``
    (returned as a timedelta: that long before the database's clock)."""
    try:
        age = seconds_in(text)
    except DurationError:
        pass
    else:
        if 0 <= age < timedelta.max.total_seconds():
            return timedelta(seconds=age)
    try:
        return parse_time(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time or an age like 30m, 1h, 2d: {text!r}") from None


def parse_ahead(text: str) -> datetime | timedelta:
    """``jobs pause --until``: an ISO-8601 time (naive without an offset: the command reads it in
    the schedule's zone), or a duration such as ``90s``, ``2h``, ``1d`` (returned as a
    timedelta: that long after the database's clock)."""
    try:
        ahead = seconds_in(text)
    except DurationError:
        pass
    else:
        if 0 < ahead < timedelta.max.total_seconds():
            return timedelta(seconds=ahead)
    try:
        value = read_when(text)
    except ValueError:
        value = None
    if not isinstance(value, datetime):  # a zero or negative duration is neither
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time or a duration like 30m, 2h, 1d: {text!r}")
    return value


def count(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def statuses(text: str) -> list[str]:
    """``--status failed,timed_out`` (repeatable)."""
    values = [v.strip() for v in text.split(",") if v.strip()]
    choices = [s.value for s in RunStatus]
    for value in values:
        if value not in choices:
            raise argparse.ArgumentTypeError(f"invalid status {value!r} (choose from {', '.join(choices)})")
    return values


def usage(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` as an ``argparse`` type: its :class:`ValueError` is the usage error's reason
    (argparse itself would say only ``invalid parse value``)."""

    def typed(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    typed.__name__ = parse.__name__
    return typed


#: ``run --for``: a duration of more than zero seconds (``90``, ``1.5``, ``5m``).
seconds = usage(positive_seconds)
