"""The health reads of :class:`tickwork.Admin` that look at many schedules: ``check`` and the
``health=`` filter of ``list``/``count``."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from ..abc import Store
from ..structures import Schedule, ScheduleState
from .health import Health, HealthPolicy, ScheduleHealth, health_of
from .info import ScheduleInfo

#: Schedules whose health is read in one go (one transaction of a few statements each).
HEALTH_BATCH = 500


class HealthReads:
    """``check`` and the health filter; :class:`tickwork.Admin` provides the store and the policy."""

    health_policy: HealthPolicy

    if TYPE_CHECKING:

        def store(self, *, write: bool = False) -> Store: ...

    def check(
        self, names: Iterable[str] | None = None, *, policy: HealthPolicy | None = None
    ) -> builtins.list[ScheduleInfo]:
        """The schedules that are not healthy (all of them, or those ``names``), in next-fire
        order, with their :attr:`~ScheduleInfo.health`.

        :param policy: the thresholds (default: :attr:`health_policy`)
        :raises tickwork.ScheduleNotFoundError: if one of ``names`` names no schedule
        """
        store = self.store()
        if names is not None:
            chosen = [store.get(name) for name in dict.fromkeys(names)]
        else:
            # One read of every schedule, not pages by offset: a page boundary in next-fire order
            # moves while nodes fire, and a schedule could be missed or seen twice.
            chosen = store.find_schedules()
        return self._infos(store, chosen, policy or self.health_policy, lambda h: h is not Health.HEALTHY)

    def _by_health(
        self,
        wanted: Health,
        state: ScheduleState | None,
        enabled: bool | None,
        search: str | None,
        failing: bool | None,
        parked: bool | None = None,
    ) -> builtins.list[ScheduleInfo]:
        """Every schedule the filters keep that is in the ``wanted`` state. Where a state implies
        a stored column, the store narrows the candidates first (paused: disabled; late: running;
        overdue: idle; parked: a fault)."""
        if wanted is Health.PAUSED and enabled is None:
            enabled = False
        elif wanted is Health.LATE and state is None:
            state = ScheduleState.RUNNING
        elif wanted is Health.OVERDUE and state is None:
            state = ScheduleState.IDLE
        elif wanted is Health.PARKED and parked is None:
            parked = True
        store = self.store()
        given = {key: value for key, value in {"failing": failing, "parked": parked}.items() if value is not None}
        chosen = store.find_schedules(state=state, enabled=enabled, search=search, **given)
        return self._infos(store, chosen, self.health_policy, lambda h: h is wanted)

    @staticmethod
    def _infos(
        store: Store, chosen: Sequence[Schedule], policy: HealthPolicy, keep: Callable[[Health], bool]
    ) -> builtins.list[ScheduleInfo]:
        out: builtins.list[ScheduleInfo] = []
        for start in range(0, len(chosen), HEALTH_BATCH):
            part = chosen[start : start + HEALTH_BATCH]
            health: dict[int, ScheduleHealth] = health_of(store, part, policy)
            kept = [s for s in part if keep(health[s.id].state)]
            last = store.last_runs([s.id for s in kept])
            out += [ScheduleInfo.of(s, last.get(s.id), health[s.id]) for s in kept]
        return out
