"""Business-day calendars for the ``holidays`` and ``on_holiday`` options (docs/holidays.md).

A calendar is a country and optional subdivision of the ``holidays`` package (``"DE"``,
``"DE-BE"``: its public holidays and its weekend), or a ``[calendars.NAME]`` table of the
configuration, which may add dates (``extra``) and set the working week (``workdays``).

The package is imported only when a schedule or a table names a calendar: a schedule without
``holidays`` never imports it (the ``tickwork[holidays]`` extra is optional).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache
from types import ModuleType
from typing import Any

from ..errors import ConfigError, did_you_mean

#: What a country calendar looks like: the package's 2- or 3-letter code, then ``-SUBDIV``. A
#: ``[calendars.NAME]`` name must not look like one (it would never be looked up).
COUNTRY_SPEC = re.compile(r"(?P<country>[A-Z]{2,3})(?:-(?P<subdiv>.+))?")
#: How far a move looks for a business day (a calendar with days off only still ends).
MAX_SEARCH_DAYS = 3660
_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_INSTALL = "pip install 'tickwork[holidays]'"


def package() -> ModuleType:
    """The ``holidays`` package.

    :raises tickwork.errors.ConfigError: telling how to install it when it is missing
    """
    try:
        import holidays
    except ImportError:
        raise ConfigError(
            f"holidays: calendars need the holidays package, which is not installed: {_INSTALL}"
        ) from None
    return holidays


@lru_cache(maxsize=1)
def _supported() -> dict[str, tuple[str, ...]]:
    return {code: tuple(subdivs) for code, subdivs in package().list_supported_countries().items()}


def check_country(where: str, country: str, subdiv: str | None, subdiv_where: str | None = None) -> None:
    """:raises tickwork.errors.ConfigError: naming the value if the package has no such country
    or subdivision (with the closest known one); an unknown subdivision under ``subdiv_where``
    when it has a key of its own (``calendars.NAME.subdiv``), else under ``where``"""
    supported = _supported()
    if country not in supported:
        raise ConfigError(
            f"{where}: unknown country {country!r}{did_you_mean(country, supported)} (the holidays package's "
            "ISO 3166 codes, e.g. 'DE', 'US', 'GB')"
        )
    if subdiv is not None and subdiv not in supported[country]:
        known = supported[country]
        listed = f"; {country}'s: {', '.join(known)}" if known else f"; {country} has none"
        raise ConfigError(
            f"{subdiv_where or where}: unknown subdivision {subdiv!r} of {country}{did_you_mean(subdiv, known)}{listed}"
        )


def parse_workdays(where: str, text: str) -> frozenset[int]:
    """The weekdays (Monday 0) of ``"Mon..Fri"``, ``"Sun..Thu"`` or ``"Mon,Wed,Fri"``.

    :raises tickwork.errors.ConfigError: naming ``where``
    """
    days: set[int] = set()
    for item in text.split(","):
        ends = [e.strip().lower()[:3] for e in item.split("..")]
        if len(ends) > 2 or not all(e in _WEEKDAYS for e in ends):
            raise ConfigError(f"{where}: not weekdays such as 'Mon..Fri' or 'Sun..Thu' or 'Mon,Wed,Fri': {text!r}")
        first, last = _WEEKDAYS.index(ends[0]), _WEEKDAYS.index(ends[-1])
        # A range may wrap past Sunday (Sat..Wed): a working week of the countries that start on Saturday.
        days.update((first + i) % 7 for i in range((last - first) % 7 + 1))
    if not days:
        raise ConfigError(f"{where}: no workdays in {text!r}")
    return frozenset(days)


def parse_dates(where: str, texts: Iterable[str]) -> frozenset[date]:
    """:raises tickwork.errors.ConfigError: naming ``where`` and the text that is not ``YYYY-MM-DD``"""
    out: set[date] = set()
    for text in texts:
        try:
            out.add(date.fromisoformat(text))
        except ValueError:
            raise ConfigError(f"{where}: not a date such as 2026-12-24: {text!r}") from None
    return frozenset(out)


@dataclass(frozen=True)
class CalendarDefinition:
    """A calendar as declared: ``[calendars.NAME]`` or a country spec.

    :param name: what the schedule's ``holidays`` says (``company``, ``DE-BE``)
    :param country: the package's country code, or ``None``: no public holidays
    :param subdiv: its subdivision
    :param extra: further days off
    :param workdays: the working week (Monday 0); ``None``: the country's (Mon..Fri without one)
    """

    name: str
    country: str | None = None
    subdiv: str | None = None
    extra: frozenset[date] = frozenset()
    workdays: frozenset[int] | None = None


def country_definition(where: str, text: str) -> CalendarDefinition | None:
    """The definition of a country spec (``DE``, ``DE-BE``), checked against the package;
    ``None`` when ``text`` does not look like one (it names a ``[calendars.NAME]`` table)."""
    match = COUNTRY_SPEC.fullmatch(text)
    if match is None:
        return None
    country, subdiv = match.group("country"), match.group("subdiv")
    check_country(where, country, subdiv)
    return CalendarDefinition(text, country, subdiv)


class Declared:
    """The ``[calendars.NAME]`` tables of the process's configuration: set by whoever loads it
    (a node, the admin API, the CLI), read wherever a schedule's fire times are computed."""

    def __init__(self) -> None:
        self.tables: dict[str, CalendarDefinition] = {}

    def use(self, definitions: Mapping[str, CalendarDefinition]) -> None:
        if definitions != self.tables:
            self.tables = dict(definitions)
            _calendar.cache_clear()


DECLARED = Declared()


def use_calendars(tables: Mapping[str, Any]) -> None:
    """Make the ``[calendars.NAME]`` tables of a configuration (``Config.calendars``: each with a
    ``definition(name)``) the ones schedules' ``holidays`` names are looked up in."""
    DECLARED.use({name: table.definition(name) for name, table in tables.items()})


def definition_of(text: str, where: str = "holidays") -> CalendarDefinition:
    """The calendar a schedule's ``holidays`` names.

    :raises tickwork.errors.ConfigError: an unknown country, subdivision or calendar name (with
        the closest one and the declared ones), or the package missing
    """
    found = country_definition(where, text)
    if found is not None:
        return found
    declared = DECLARED.tables.get(text)
    if declared is None:
        names = sorted(DECLARED.tables)
        known = f"declared calendars: {', '.join(names)}" if names else "no [calendars.NAME] table is declared"
        raise ConfigError(
            f"{where}: {text!r} is neither a country calendar such as 'DE' or 'DE-BE' nor a declared "
            f"calendar{did_you_mean(text, names)} ({known})"
        )
    return declared


@lru_cache(maxsize=64)
def _country_year(country: str, subdiv: str | None, year: int) -> tuple[dict[date, str], frozenset[date]]:
    """The public holidays of one year, by date, and the weekend days worked that year. Copied
    out of the package's dict-like object: that one fills itself on lookup, and the engine,
    the admin API and the dashboard look up from several threads."""
    found = package().country_holidays(country, subdiv=subdiv, years=year)
    return dict(found.items()), frozenset(getattr(found, "weekend_workdays", ()))


@lru_cache(maxsize=64)
def _country_weekend(country: str) -> frozenset[int]:
    return frozenset(package().country_holidays(country, years=()).weekend)


class Calendar:
    """Which days are business days: not a holiday, not an extra day off, and a workday."""

    def __init__(self, definition: CalendarDefinition) -> None:
        self.definition = definition
        if definition.workdays is not None:
            self.workdays = definition.workdays
        elif definition.country is not None:
            self.workdays = frozenset(range(7)) - _country_weekend(definition.country)
        else:
            self.workdays = frozenset(range(5))

    @property
    def name(self) -> str:
        return self.definition.name

    def day_off(self, day: date) -> str | None:
        """Why ``day`` is no business day (``Labour Day``, ``a Saturday``), or ``None``: it is one."""
        d = self.definition
        if day in d.extra:
            return f"{day.isoformat()} is a day off of calendar {d.name}"
        worked_weekend: frozenset[date] = frozenset()
        if d.country is not None:
            by_date, worked_weekend = _country_year(d.country, d.subdiv, day.year)
            name = by_date.get(day)
            if name is not None:
                return f"{day.isoformat()} is {name} ({d.name})"
        if day.weekday() not in self.workdays and not (d.workdays is None and day in worked_weekend):
            return f"{day.isoformat()} is a {day.strftime('%A')}, no workday of {d.name}"
        return None

    def business_day(self, start: date, step: int) -> date:
        """The first business day after ``start`` (``step`` 1) or before it (``step`` -1).

        :raises tickwork.errors.ConfigError: if there is none within :data:`MAX_SEARCH_DAYS`
        """
        day = start
        for _ in range(MAX_SEARCH_DAYS):
            day += timedelta(days=step)
            if self.day_off(day) is None:
                return day
        raise ConfigError(
            f"holidays: calendar {self.name} has no business day within {MAX_SEARCH_DAYS} days of {start}"
        )


@lru_cache(maxsize=256)
def _calendar(definition: CalendarDefinition) -> Calendar:
    return Calendar(definition)


def calendar(text: str, where: str = "holidays") -> Calendar:
    """The (cached) calendar a schedule's ``holidays`` names (:func:`definition_of`).

    :raises tickwork.errors.ConfigError: as :func:`definition_of`, naming ``where``
    """
    return _calendar(definition_of(text, where))
