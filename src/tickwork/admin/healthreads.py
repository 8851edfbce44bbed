"""The health reads of :class:`tickwork.Admin` that look at many schedules: ``check``, ``probe``
(``tickwork check``) and the ``health=`` filter of ``list``/``count``."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..abc import Store
from ..structures import Schedule, ScheduleState
from .health import Health, HealthPolicy, ScheduleHealth, health_of
from .info import ScheduleInfo

#: Schedules whose health is read in one go (one transaction of a few statements each).
HEALTH_BATCH = 500


@dataclass(frozen=True)
class CheckReport:
    """What ``tickwork check`` reports (:meth:`HealthReads.probe`): every schedule checked is
    healthy, or in one of three groups.

    :param schedules: how many were checked
    :param healthy: how many of them are healthy
    :param unhealthy: those that need attention (:attr:`ScheduleHealth.alerting`: failing,
        overdue, late, parked, paused by tickwork after failures, ...)
    :param paused: those paused on purpose (``jobs pause``, with a note)
    :param disabled: those disabled on purpose without a pause (``jobs disable``, ``enabled = false``)
    :param strict: whether paused and disabled ones fail the check too
    """

    schedules: int
    healthy: int
    unhealthy: tuple[ScheduleInfo, ...]
    paused: tuple[ScheduleInfo, ...]
    disabled: tuple[ScheduleInfo, ...]
    strict: bool = False

    @property
    def failing_check(self) -> tuple[ScheduleInfo, ...]:
        """The schedules that make the check fail."""
        return self.unhealthy + (self.paused + self.disabled if self.strict else ())

    @property
    def ok(self) -> bool:
        return not self.failing_check

    def summary(self) -> dict[str, Any]:
        return {
            "schedules": self.schedules,
            "healthy": self.healthy,
            "unhealthy": len(self.unhealthy),
            "paused": len(self.paused),
            "disabled": len(self.disabled),
            "strict": self.strict,
            "ok": self.ok,
        }


class HealthReads:
    """``check`` and the health filter; :class:`tickwork.Admin` provides the store and the policy."""

    health_policy: HealthPolicy

    if TYPE_CHECKING:

        def store(self, *, write: bool = False) -> Store: ...

        def named_in(self) -> str: ...

        def read_in(self) -> str | None: ...

    def check(
        self, names: Iterable[str] | None = None, *, policy: HealthPolicy | None = None
    ) -> builtins.list[ScheduleInfo]:
        """The schedules that are not healthy (all of them, or those ``names``), in next-fire
        order, with their :attr:`~ScheduleInfo.health`.

        :param policy: the thresholds (default: :attr:`health_policy`)
        :raises tickwork.ScheduleNotFoundError: if one of ``names`` names no schedule
        """
        store = self.store()
        chosen = self._chosen(store, names)
        return self._infos(store, chosen, policy or self.health_policy, lambda h: h is not Health.HEALTHY)

    def probe(
        self, names: Iterable[str] | None = None, *, policy: HealthPolicy | None = None, strict: bool = False
    ) -> CheckReport:
        """What ``tickwork check`` tells a probe: the schedules (all of them, or those ``names``)
        counted as healthy, unhealthy, paused or disabled. A schedule paused or disabled on purpose
        fails the check only when ``strict``; one paused by tickwork after failures always does.

        :raises tickwork.ScheduleNotFoundError: if one of ``names`` names no schedule
        """
        store = self.store()
        chosen = self._chosen(store, names)
        others = self._infos(store, chosen, policy or self.health_policy, lambda h: h is not Health.HEALTHY)
        groups: dict[str, builtins.list[ScheduleInfo]] = {"unhealthy": [], "paused": [], "disabled": []}
        for info in others:
            health = info.health
            assert health is not None  # _infos computes it
            if health.alerting or health.state is not Health.PAUSED:
                groups["unhealthy"].append(info)
            else:
                groups["paused" if health.pause is not None else "disabled"].append(info)
        return CheckReport(
            schedules=len(chosen),
            healthy=len(chosen) - len(others),
            unhealthy=tuple(groups["unhealthy"]),
            paused=tuple(groups["paused"]),
            disabled=tuple(groups["disabled"]),
            strict=strict,
        )

    def _chosen(self, store: Store, names: Iterable[str] | None) -> builtins.list[Schedule]:
        if names is not None:
            return [store.get(name, namespace=self.named_in()) for name in dict.fromkeys(names)]
        # One read of every schedule, not pages by offset: a page boundary in next-fire order
        # moves while nodes fire, and a schedule could be missed or seen twice.
        return store.find_schedules(namespace=self.read_in())

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
        chosen = store.find_schedules(state=state, enabled=enabled, search=search, namespace=self.read_in(), **given)
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
