"""A schedule's fire times: its trigger's and those of its further expressions (``also``), less
those its exclusions match (``exclude``), dropped or moved off the days off of its ``holidays``
calendar (``on_holiday``; docs/holidays.md), moved by its ``jitter`` and kept within its
``start_at`` and ``end_at`` (docs/triggers.md#schedule-options).

Everything that computes a schedule's fire times (the first fire when it is written, the engine
after each fire, ``tickwork next``, :class:`tickwork.testing.SchedulerHarness`) asks
:func:`fire_times`; for a schedule that sets none of these options it is the compiled trigger
itself, so its fire times cost what they did before the options existed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from ..abc import Trigger
from ..config.calendars import Calendar, calendar
from ..errors import TriggerError
from ..plugin.manager import PluginManager
from ..structures import OnHoliday, ScheduleSpec
from .triggers import MIN_PERIOD, PERIOD_SAMPLES, detect_kind, get_trigger

_MICRO = timedelta(microseconds=1)
_MINUTE = timedelta(minutes=1)
#: Excluded days or minutes in a row after which a schedule is refused (it would never fire, or
#: its search would not end): the engine parks it with this error.
MAX_EXCLUDED_IN_A_ROW = 20_000
#: How far back :meth:`FireTimes.fire_before` looks for the fire before a fire: four years (a
#: yearly schedule on a leap day, or one whose holiday rule dropped a few years' fires).
LOOKBACK = timedelta(days=4 * 366)


def jitter_offset(name: str, jitter: timedelta) -> timedelta:
    """The fixed offset in ``[0, jitter)`` of schedule ``name``, in whole microseconds: the same in
    every process and version (the first 8 bytes of the name's SHA-256, like systemd's
    ``FixedRandomDelay=``), so a fire's time, its identity in the history, never changes."""
    span = jitter // _MICRO
    if span <= 0:
        return timedelta(0)
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return timedelta(microseconds=int.from_bytes(digest[:8], "big") % span)


class Exclusion:
    """Times an ``exclude`` expression matches: every time of a local day on which it fires when
    it names no time of day (no ``:`` and not a cron expression: ``*-12-25``, ``Sat,Sun``), else
    every time of a minute in which it fires (cron ``* 12 * * *``: 12:00 to 12:59)."""

    __slots__ = ("trigger", "whole_days", "zone")

    def __init__(self, trigger: Trigger, zone: str) -> None:
        self.trigger = trigger
        self.zone = ZoneInfo(zone)
        self.whole_days = trigger.kind != "cron" and ":" not in trigger.expression

    def window_end(self, moment: datetime) -> datetime | None:
        """The end of the excluded day or minute that holds ``moment`` (``None``: not excluded)."""
        if self.whole_days:
            local = moment.astimezone(self.zone)
            day = local.replace(hour=0, minute=0, second=0, microsecond=0, fold=0)
            start = day.astimezone(moment.tzinfo)
            end = (day + timedelta(days=1)).replace(tzinfo=self.zone).astimezone(moment.tzinfo)
        else:
            start = moment.replace(second=0, microsecond=0)
            end = start + _MINUTE
        hit = self.trigger.next_after(start - _MICRO)
        return end if hit is not None and hit < end else None


@dataclass(frozen=True)
class HolidayRule:
    """A schedule's ``holidays`` calendar and ``on_holiday`` policy, judged on local days of ``zone``."""

    calendar: Calendar
    policy: OnHoliday
    zone: ZoneInfo

    @classmethod
    def of(cls, spec: ScheduleSpec) -> HolidayRule | None:
        """``spec``'s rule; ``None`` without ``holidays``.

        :raises tickwork.errors.ConfigError: an unknown calendar, or the package missing
        """
        if spec.holidays is None:
            return None
        return cls(calendar(spec.holidays), spec.on_holiday, ZoneInfo(spec.timezone))


class FireTimes:
    """``next_after`` of a schedule whose options change its trigger's fire times.

    The triggers' fire times merged (a time two give is one fire), less those an exclusion
    matches; those on a day off of the holiday calendar dropped or moved (:meth:`outcome`);
    each fire ``t`` left becomes ``t + offset``; only those within ``[start_at, end_at]`` fire.
    """

    __slots__ = ("end_at", "exclusions", "holidays", "offset", "start_at", "triggers")

    def __init__(
        self,
        trigger: Trigger,
        *,
        offset: timedelta = timedelta(0),
        start_at: datetime | None = None,
        end_at: datetime | None = None,
        also: Sequence[Trigger] = (),
        exclusions: Sequence[Exclusion] = (),
        holidays: HolidayRule | None = None,
    ) -> None:
        self.triggers = (trigger, *also)
        self.offset = offset
        self.start_at = start_at
        self.end_at = end_at
        self.exclusions = tuple(exclusions)
        self.holidays = holidays

    @classmethod
    def of(cls, trigger: Trigger, spec: ScheduleSpec, manager: PluginManager | None = None) -> FireTimes:
        """The fire times of ``spec``, whose trigger is ``trigger``.

        :raises tickwork.errors.TriggerError: for an ``also`` or ``exclude`` expression that is invalid
        """
        return cls(
            trigger,
            offset=jitter_offset(spec.name, spec.jitter),
            start_at=spec.start_at,
            end_at=spec.end_at,
            also=[compiled(e, spec.timezone, manager) for e in spec.also],
            exclusions=[Exclusion(excluding(e, spec.timezone, manager), spec.timezone) for e in spec.exclude],
            holidays=HolidayRule.of(spec),
        )

    def nominal_after(self, after: datetime) -> datetime | None:
        """The first time after ``after`` that any trigger gives and no exclusion matches."""
        for _ in range(MAX_EXCLUDED_IN_A_ROW):
            found = [t for t in (trigger.next_after(after) for trigger in self.triggers) if t is not None]
            if not found:
                return None
            first = min(found)
            ends = [end for end in (e.window_end(first) for e in self.exclusions) if end is not None]
            if not ends:
                return first
            # Past the whole excluded day or minute at once: its other fires are excluded too.
            after = max(first, max(ends) - _MICRO)
        raise TriggerError(f"the exclusions match more than {MAX_EXCLUDED_IN_A_ROW:,} days or minutes in a row")

    def outcome(self, nominal: datetime) -> tuple[datetime | None, str]:
        """Where the fire of ``nominal`` (a time :meth:`nominal_after` gave) goes under the
        holiday rule, and why: ``(nominal, "")`` on a business day; ``(None, reason)`` when it
        is dropped; ``(moved, reason)`` when it moves to the same local time on the next or
        previous business day. A move that would land on or past the day of the regular fire
        after it (``next``) or before it (``previous``) is dropped: one fire a day at most, and
        the fires keep their order."""
        rule = self.holidays
        if rule is None:
            return nominal, ""
        local = nominal.astimezone(rule.zone)
        off = rule.calendar.day_off(local.date())
        if off is None:
            return nominal, ""
        if rule.policy is OnHoliday.SKIP:
            return None, f"on_holiday skip: {off}"
        forward = rule.policy is OnHoliday.NEXT
        day = rule.calendar.business_day(local.date(), 1 if forward else -1)
        moved = local.replace(year=day.year, month=day.month, day=day.day).astimezone(nominal.tzinfo)
        start = datetime(day.year, day.month, day.day, tzinfo=rule.zone)
        if forward:
            regular = self.nominal_after(nominal)
            end = (start + timedelta(days=1)).replace(tzinfo=rule.zone)
            if regular is not None and regular < end:
                return None, (
                    f"on_holiday next: {off}; moved to {day.isoformat()} it would not come before the day of "
                    f"the next regular fire ({regular.astimezone(rule.zone).isoformat()})"
                )
        else:
            regular = self.nominal_after(start - _MICRO)
            if regular is not None and regular < nominal:
                return None, (
                    f"on_holiday previous: {off}; moved to {day.isoformat()} it would not come after the day "
                    f"of the previous regular fire ({regular.astimezone(rule.zone).isoformat()})"
                )
        return moved, f"moved from {local.isoformat()}: {off}"

    def _holiday_after(self, after: datetime) -> tuple[datetime, str] | None:
        """The first fire after ``after`` of the holiday rule, before the offset, with its note."""
        current = after
        for _ in range(MAX_EXCLUDED_IN_A_ROW):
            nominal = self.nominal_after(current)
            if nominal is None:
                return None
            moved, note = self.outcome(nominal)
            # A fire moved to the previous business day may land at or before ``after``: passed.
            if moved is not None and moved > after:
                return moved, note
            current = nominal
        raise TriggerError(f"holidays: more than {MAX_EXCLUDED_IN_A_ROW:,} fires in a row fall on days off")

    def fire_after(self, after: datetime) -> tuple[datetime, str] | None:
        """The first fire strictly after ``after`` and why it is not at its regular time (``""``:
        it is), or ``None``: never again."""
        if self.start_at is not None and after < self.start_at:
            after = self.start_at - _MICRO  # the first fire at or after start_at
        if self.holidays is None:
            nominal = self.nominal_after(after - self.offset)
            found = None if nominal is None else (nominal, "")
        else:
            found = self._holiday_after(after - self.offset)
        if found is None:
            return None
        moment = found[0] + self.offset
        if self.end_at is not None and moment > self.end_at:
            return None
        return moment, found[1]

    def next_after(self, after: datetime) -> datetime | None:
        """The first fire strictly after ``after`` (``None``: never again)."""
        found = self.fire_after(after)
        return None if found is None else found[0]

    def fires_after(self, after: datetime) -> Iterator[tuple[datetime, str]]:
        """The fires after ``after``, each with why it moved (``""``: it did not)."""
        found = self.fire_after(after)
        while found is not None:
            yield found
            found = self.fire_after(found[0])

    def dropped(self, after: datetime, before: datetime | None, limit: int) -> list[tuple[datetime, str]]:
        """The fire times in ``(after, before)`` (``before`` ``None``: no bound) that the holiday
        rule drops, each with its reason: at most ``limit`` (what the engine records as skipped
        when it plans past them)."""
        out: list[tuple[datetime, str]] = []
        if self.holidays is None:
            return out
        current = after - self.offset
        for _ in range(MAX_EXCLUDED_IN_A_ROW):
            nominal = self.nominal_after(current)
            if nominal is None or len(out) >= limit:
                break
            moment = nominal + self.offset
            if (before is not None and moment >= before) or (self.end_at is not None and moment > self.end_at):
                break
            moved, reason = self.outcome(nominal)
            if moved is None and (self.start_at is None or moment >= self.start_at):
                out.append((moment, reason))
            current = nominal
        return out

    def fire_before(self, before: datetime) -> datetime | None:
        """The last fire strictly before ``before``, looked for up to :data:`LOOKBACK` back
        (``None``: none there). Fire times are searched forwards only: a window doubling from a
        minute back until it holds a fire, then walked to its last one before ``before``."""
        span = timedelta(minutes=1)
        while True:
            span = min(span, LOOKBACK)
            found = self.next_after(before - span)
            if found is not None and found < before:
                following = self.next_after(found)
                while following is not None and following < before:
                    found, following = following, self.next_after(following)
                return found
            if span >= LOOKBACK:
                return None
            span *= 2

    def note_of(self, moment: datetime) -> str:
        """Why the fire at ``moment`` is not at its regular time (``""``: it is, or ``moment``
        is no fire of these times). Searched from the fire before it: a fire moved forward
        comes from a regular time before the moment just before it."""
        previous = self.fire_before(moment)
        found = self.fire_after(moment - LOOKBACK if previous is None else previous)
        return found[1] if found is not None and found[0] == moment else ""

    def due_drops(
        self,
        scheduled_for: datetime,
        next_fire: datetime | None,
        now: datetime,
        recorded_until: Callable[[], datetime | None],
        limit: int,
    ) -> list[tuple[datetime, str]]:
        """The fire times the holiday rule dropped whose time has come (at or before ``now``, the
        database clock) that the end of the fire of ``scheduled_for`` records as skipped, with
        their reasons, in time order, at most ``limit`` (docs/holidays.md#when-the-skipped-rows-are-written):

        - those after it, before ``next_fire``, that have passed already;
        - those between the fire before it and it that the history has not recorded yet: later
          than ``recorded_until()``, when the history last recorded a fire of the schedule
          before ``scheduled_for`` (asked only when there are such drops). ``None`` (no fire
          recorded before it: its first fire, or its history pruned) records none of them: they
          may predate the schedule or its definition.

        A time still in the future is never written: a row written ahead would stay in the
        history if the schedule changed meanwhile, and the fire it stands for, due after all,
        would then be refused as already recorded.
        """
        if self.holidays is None or limit <= 0:
            return []
        horizon = now + _MICRO
        ahead = self.dropped(scheduled_for, horizon if next_fire is None else min(next_fire, horizon), limit)
        previous = self.fire_before(scheduled_for)
        lower = scheduled_for - LOOKBACK if previous is None else previous
        if self.start_at is not None:
            lower = max(lower, self.start_at - _MICRO)
        behind = self.dropped(lower, min(scheduled_for, horizon), limit)
        if behind:
            since = recorded_until()
            behind = [] if since is None else [item for item in behind if item[0] > since]
        return (behind + ahead)[:limit]


def compiled(expression: str, zone: str, manager: PluginManager | None) -> Trigger:
    """The trigger of an ``also`` or ``exclude`` expression (its kind recognised) in ``zone``."""
    return get_trigger(detect_kind(expression, manager), expression, zone, manager)


def excluding(expression: str, zone: str, manager: PluginManager | None) -> Trigger:
    """The trigger of an ``exclude`` expression: a calendar or cron one (days, weekdays, times of
    day); an interval or a single moment has no days or minutes to exclude.

    :raises tickwork.errors.TriggerError: naming the expression otherwise
    """
    trigger = compiled(expression, zone, manager)
    if trigger.kind not in ("calendar", "cron"):
        raise TriggerError(
            f"exclude: {expression!r} is of kind {trigger.kind}; exclusions are calendar or cron "
            "expressions (e.g. '*-12-25', 'Sat,Sun', '* 12 * * *')"
        )
    return trigger


def check_merged_period(fires: FireTimes, after: datetime, samples: int = PERIOD_SAMPLES) -> None:
    """Refuse expressions whose merged fires come less than :data:`MIN_PERIOD` apart (each may be
    slow enough alone: ``90s`` and ``*/1 * * * * *`` are not together), judged on ``samples``
    consecutive fires after ``after``.

    :raises tickwork.errors.TriggerError: naming the two fires
    """
    previous = fires.next_after(after)
    for _ in range(samples):
        if previous is None:
            return
        nxt = fires.next_after(previous)
        if nxt is not None and (nxt - previous).total_seconds() < MIN_PERIOD:
            raise TriggerError(
                f"also: the expressions together fire less than {MIN_PERIOD:g} s apart ({previous.isoformat()} "
                f"and {nxt.isoformat()}); schedules fire at most once a second"
            )
        previous = nxt


def fire_times(spec: ScheduleSpec, manager: PluginManager | None = None) -> Trigger | FireTimes:
    """What gives ``spec``'s fire times (``.next_after(after)``): the compiled trigger, or a
    :class:`FireTimes` around it when ``spec`` sets jitter, bounds, further expressions,
    exclusions or a holiday calendar.

    :raises tickwork.errors.PluginNotFoundError: if the kind is not registered
    :raises tickwork.errors.TriggerError: if an expression is invalid
    :raises tickwork.errors.ConfigError: an unknown holiday calendar, or the package missing
    """
    trigger = get_trigger(spec.trigger_kind, spec.expression, spec.timezone, manager)
    return trigger if spec.plain else FireTimes.of(trigger, spec, manager)
