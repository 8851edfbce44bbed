"""The admin API's schedules as code (:class:`Applying`, a part of :class:`tickwork.Admin`):
planning and applying a set of run-time schedules, as ``tickwork apply`` does
(docs/schedules-in-git.md). The plan itself is :mod:`tickwork.scheduling.applyplan`."""

from __future__ import annotations

import builtins
import collections
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

from ..abc import Store
from ..errors import ConfigError, ScheduleNotFoundError
from ..plugin.manager import PluginManager
from ..scheduling.applyplan import ApplyPlan, Drift, applied_by, make_plan
from ..scheduling.options import ScheduleOptions
from ..scheduling.sync import first_fires
from ..scheduling.validation import SpecBuilder
from ..structures import DEFAULT_NAMESPACE, Schedule, ScheduleKey, SchedulePlan, ScheduleSpec, check_namespace
from .liveexecutors import LiveExecutors

#: What :meth:`Applying.plan` and :meth:`Applying.apply` take: specs, or dicts of ``Admin.add``'s arguments.
Declared = Iterable[ScheduleSpec | Mapping[str, Any]]


class Applying:
    """The apply part of :class:`tickwork.Admin` (which provides the store, the plugin manager,
    the spec builder and :meth:`spec`)."""

    manager: PluginManager
    specs: SpecBuilder

    if TYPE_CHECKING:

        def store(self, *, write: bool = False) -> Store: ...

        def live_executors(self) -> LiveExecutors: ...

        def spec(
            self,
            name: str,
            expression: str,
            target: str,
            *,
            module: str | None = None,
            check_nodes: bool = True,
            live: LiveExecutors | None = None,
            **options: Unpack[ScheduleOptions],
        ) -> ScheduleSpec: ...

    def plan(
        self,
        schedules: Declared,
        *,
        prune: bool = False,
        namespace: str = DEFAULT_NAMESPACE,
        check_nodes: bool = True,
        live: LiveExecutors | None = None,
    ) -> ApplyPlan:
        """What :meth:`apply` would do with ``schedules`` (validated as :meth:`add_many` does),
        writing nothing: to add, to change (each field, old and new), to remove (with
        ``prune``: the run-time schedules of ``namespace`` no entry names), the names declared in
        code it leaves alone, and drift: schedules changed since the last apply by anything
        else, with the versions that say who changed them and when.

        :raises tickwork.ConfigError: an invalid schedule, or a name given twice
        """
        specs = self._checked(schedules, namespace, check_nodes, live)
        store = self.store()
        found = make_plan(specs, _of_namespace(store.list_schedules(), namespace), prune=prune, namespace=namespace)
        return found.with_drift(_drift_versions(store, found.drift, namespace))

    def apply(
        self,
        schedules: Declared,
        *,
        prune: bool = False,
        namespace: str = DEFAULT_NAMESPACE,
        check_nodes: bool = True,
        live: LiveExecutors | None = None,
        by: str | None = None,
    ) -> ApplyPlan:
        """Make the run-time schedules of ``namespace`` what ``schedules`` say (and, with
        ``prune``, only those), in one transaction of the store's batched writes: all or
        nothing. The plan is made from the rows that transaction reads under the store's write
        lock, so it is what gets written; returned as :meth:`plan` returns it. The versions it
        writes are by ``apply:`` and ``by``; every schedule it names is recorded as applied at
        the version it leaves (drift is measured from there). Schedules declared in code are
        left alone; a stored schedule's state (enabled, a pause) too.

        A run in flight on a changed or removed schedule ends under its fence, as with every
        admin write (docs/claim-protocol.md, "Writes while a run is in flight").

        :raises tickwork.ConfigError: an invalid schedule, or a name given twice; nothing is written
        """
        specs = self._checked(schedules, namespace, check_nodes, live)
        store = self.store(write=True)
        # Who drifted what, read before the write (a removal deletes a schedule's versions).
        seen = make_plan(specs, _of_namespace(store.list_schedules(), namespace), prune=prune, namespace=namespace)
        drift = _drift_versions(store, seen.drift, namespace)
        made: builtins.list[ApplyPlan] = []
        counts: dict[ScheduleKey, int] = {}

        def plan(stored: Sequence[Schedule]) -> SchedulePlan:
            counts.update({s.key: s.run_count for s in stored})
            made[:] = [make_plan(specs, _of_namespace(stored, namespace), prune=prune, namespace=namespace)]
            return made[0].write

        store.write_schedules(plan, first_fires(self.manager, counts), by=applied_by(by))
        return made[0].with_drift(drift)

    def _checked(
        self, schedules: Declared, namespace: str, check_nodes: bool, live: LiveExecutors | None
    ) -> builtins.list[ScheduleSpec]:
        if isinstance(schedules, Mapping):
            raise ConfigError("apply: expected a list of schedules, got one mapping")
        try:
            check_namespace(namespace)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        # An apply makes one namespace what its files say: an entry naming none is in it, one
        # naming another is refused (its namespace would be pruned, or written, by mistake).
        elsewhere = sorted(
            str(s.get("name"))
            for s in schedules
            if isinstance(s, Mapping) and s.get("namespace", namespace) != namespace
        )
        elsewhere += sorted(s.name for s in schedules if isinstance(s, ScheduleSpec) and s.namespace != namespace)
        if elsewhere:
            raise ConfigError(
                f"apply: {', '.join(elsewhere)} name another namespace than this apply's {namespace!r} "
                "(apply one namespace at a time: --namespace NAME)"
            )
        schedules = [{**s, "namespace": namespace} if isinstance(s, Mapping) else s for s in schedules]
        if check_nodes and live is None:
            live = self.live_executors()  # read once for them all
        judge = live.judge if check_nodes and live is not None else None
        checked = [
            self.specs.check(s, run_by_nodes=judge)
            if isinstance(s, ScheduleSpec)
            else self.spec(**s, check_nodes=check_nodes, live=live)
            for s in schedules
        ]
        declared = sorted(s.name for s in checked if s.module is not None)
        if declared:
            raise ConfigError(f"apply: run-time schedules only; {', '.join(declared)} name a module")
        twice = sorted(n for n, c in collections.Counter(s.name for s in checked).items() if c > 1)
        if twice:
            raise ConfigError(f"apply: schedule names given more than once: {', '.join(twice)}")
        return checked


def _of_namespace(stored: Sequence[Schedule], namespace: str) -> Sequence[Schedule]:
    """The stored schedules of ``namespace``: an apply neither reads nor touches another's."""
    return [s for s in stored if s.spec.namespace == namespace]


def _drift_versions(store: Store, drift: Sequence[Drift], namespace: str) -> dict[str, Drift]:
    """Each drifted schedule of ``namespace`` with the versions written since its last apply."""
    out: dict[str, Drift] = {}
    for found in drift:
        try:
            versions = store.versions(found.name, namespace=namespace)
        except NotImplementedError:
            versions = []  # a store that keeps no versions: the numbers are all there is
        except ScheduleNotFoundError:
            continue  # removed meanwhile
        later = tuple(v for v in versions if v.version > found.applied_version)
        out[found.name] = Drift(found.name, found.applied_version, found.version, later)
    return out
