"""A schedule's fire times: its trigger's, moved by its ``jitter`` and kept within its
``start_at`` and ``end_at`` (docs/triggers.md#schedule-options).

Everything that computes a schedule's fire times (the first fire when it is written, the engine
after each fire, ``tickwork next``, :class:`tickwork.testing.SchedulerHarness`) asks
:func:`fire_times`; for a schedule that sets none of these options it is the compiled trigger
itself, so its fire times cost what they did before the options existed.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from ..abc import Trigger
from ..plugin.manager import PluginManager
from ..structures import ScheduleSpec
from .triggers import get_trigger

_MICRO = timedelta(microseconds=1)


def jitter_offset(name: str, jitter: timedelta) -> timedelta:
    """The fixed offset in ``[0, jitter)`` of schedule ``name``, in whole microseconds: the same in
    every process and version (the first 8 bytes of the name's SHA-256, like systemd's
    ``FixedRandomDelay=``), so a fire's time, its identity in the history, never changes."""
    span = jitter // _MICRO
    if span <= 0:
        return timedelta(0)
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return timedelta(microseconds=int.from_bytes(digest[:8], "big") % span)


class FireTimes:
    """``next_after`` of a schedule whose options move or bound its trigger's fire times.

    A trigger fire ``t`` becomes ``t + offset``; only those within ``[start_at, end_at]`` fire.
    """

    __slots__ = ("end_at", "offset", "start_at", "trigger")

    def __init__(
        self,
        trigger: Trigger,
        *,
        offset: timedelta = timedelta(0),
        start_at: datetime | None = None,
        end_at: datetime | None = None,
    ) -> None:
        self.trigger = trigger
        self.offset = offset
        self.start_at = start_at
        self.end_at = end_at

    @classmethod
    def of(cls, trigger: Trigger, spec: ScheduleSpec) -> FireTimes:
        """The fire times of ``spec``, whose trigger is ``trigger``."""
        return cls(trigger, offset=jitter_offset(spec.name, spec.jitter), start_at=spec.start_at, end_at=spec.end_at)

    def next_after(self, after: datetime) -> datetime | None:
        """The first fire strictly after ``after`` (``None``: never again)."""
        if self.start_at is not None and after < self.start_at:
            after = self.start_at - _MICRO  # the first fire at or after start_at
        nominal = self.trigger.next_after(after - self.offset)
        if nominal is None:
            return None
        moment = nominal + self.offset
        if self.end_at is not None and moment > self.end_at:
            return None
        return moment


def fire_times(spec: ScheduleSpec, manager: PluginManager | None = None) -> Trigger | FireTimes:
    """What gives ``spec``'s fire times (``.next_after(after)``): the compiled trigger, or a
    :class:`FireTimes` around it when ``spec`` sets jitter or bounds.

    :raises tickwork.errors.PluginNotFoundError: if the kind is not registered
    :raises tickwork.errors.TriggerError: if the expression is invalid
    """
    trigger = get_trigger(spec.trigger_kind, spec.expression, spec.timezone, manager)
    return trigger if spec.plain else FireTimes.of(trigger, spec)
