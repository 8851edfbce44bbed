"""The compiled triggers of one engine: each schedule's ``next_after``, kept per trigger."""

from __future__ import annotations

from datetime import datetime

from ..plugin.manager import PluginManager
from ..scheduling.firetimes import FireTimes
from ..scheduling.triggers import checked_period, get_trigger
from ..structures import ScheduleSpec
from .planning import LastAnswer, NextAfter

#: Compiled, period-checked triggers kept per engine (by kind, expression and zone).
TRIGGER_CACHE_SIZE = 65536


class NextFires:
    """``next_after`` of each schedule's compiled, period-checked trigger, remembering its last
    answer (:class:`~tickwork.engine.planning.LastAnswer`). Used by the engine's loop thread only.

    :param manager: the plugin manager whose triggers are looked up (``None``: the default one)
    """

    def __init__(self, manager: PluginManager | None) -> None:
        self.manager = manager
        self._cache: dict[tuple[object, ...], NextAfter] = {}

    def of(self, spec: ScheduleSpec, after: datetime) -> NextAfter:
        """The ``next_after`` of ``spec``'s trigger; ``after`` (the fire it follows) is where the
        period check looks the first time the trigger is met.

        :raises tickwork.errors.TriggerError: an unknown kind or zone, or a trigger firing too often
        """
        # Twice per fire (start and end): the registry lookup, the compile cache and the period
        # check's cache each hash the trigger; one dict keyed by three strings is cheaper.
        key: tuple[object, ...] = (spec.trigger_kind, spec.expression, spec.timezone)
        moved = (
            spec.start_at is not None
            or spec.end_at is not None
            or spec.jitter
            or spec.also
            or spec.exclude
            or spec.holidays is not None
        )
        if moved:
            # The options are the schedule's own (the jitter offset comes from its name).
            key += (
                spec.name,
                spec.jitter,
                spec.start_at,
                spec.end_at,
                spec.also,
                spec.exclude,
                spec.holidays,
                spec.on_holiday,
            )
        next_after = self._cache.get(key)
        if next_after is None:
            trigger = checked_period(
                get_trigger(spec.trigger_kind, spec.expression, spec.timezone, self.manager), after
            )
            if moved:
                fires = FireTimes.of(trigger, spec, self.manager)
                next_after = LastAnswer(fires.next_after, fires.due_drops if fires.holidays is not None else None)
            else:
                next_after = LastAnswer(trigger.next_after)
            if len(self._cache) >= TRIGGER_CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = next_after
        return next_after
