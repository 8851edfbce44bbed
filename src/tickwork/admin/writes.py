"""The admin API's writes: adding, changing and removing schedules (:class:`ScheduleWrites`, a
part of :class:`tickwork.Admin`). Every write validates first (:class:`~tickwork.scheduling.validation.SpecBuilder`)
and goes through :mod:`tickwork.scheduling.sync`, the same functions the node uses."""

from __future__ import annotations

import builtins
import collections
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Unpack

from ..abc import Store
from ..errors import ConfigError, ScheduleNotFoundError, TickworkError
from ..plugin.manager import PluginManager
from ..scheduling import sync as schedules
from ..scheduling.options import ALIASES, NAMES, ScheduleOptions, of_spec
from ..scheduling.validation import SpecBuilder
from ..structures import ALL_NAMESPACES, Pause, RunRecord, Schedule, ScheduleSpec, iso_z, utc
from .health import HealthPolicy, health_of
from .info import ScheduleInfo
from .liveexecutors import LiveExecutors

#: The keyword names of :meth:`Admin.add` that :meth:`Admin.update` accepts too.
UPDATABLE = ("expression", "target", *NAMES)


class ScheduleWrites:
    """The writes of :class:`tickwork.Admin` (which provides the store, the plugin manager and
    the spec builder); documented there and in docs/admin-api.md."""

    manager: PluginManager
    specs: SpecBuilder
    health_policy: HealthPolicy
    #: The namespace names address (docs/teams.md); :data:`ALL_NAMESPACES`: every one, for reads.
    namespace: str

    def named_in(self) -> str:
        """The namespace a schedule's name is looked up and written in.

        :raises tickwork.errors.ConfigError: when this admin reads every namespace (``*``)
        """
        if self.namespace == ALL_NAMESPACES:
            raise ConfigError(
                "a schedule's name is unique only within its namespace: name one (--namespace NAME), not '*'"
            )
        return self.namespace

    def read_in(self) -> str | None:
        """The namespace listings read: this admin's, ``None`` for every one (``*``)."""
        return None if self.namespace == ALL_NAMESPACES else self.namespace

    if TYPE_CHECKING:

        def store(self, *, write: bool = False) -> Store: ...

        def live_executors(self) -> LiveExecutors: ...

    def add(
        self,
        name: str,
        expression: str,
        target: str,
        *,
        replace: bool = False,
        check_nodes: bool = True,
        by: str | None = None,
        **options: Unpack[ScheduleOptions],
    ) -> ScheduleInfo:
        """Validate and create a run-time schedule, first due at its next fire after now: its
        version 1, written ``by`` whom (an operator's name, kept with the version).

        The options are a schedule's (:data:`~tickwork.scheduling.options.OPTIONS`, the same as
        ``tickwork jobs add`` and schedule files take): ``kind`` (recognised from ``expression``
        when omitted), ``tz``, ``executor`` (default ``[scheduler] default_executor``; see
        ``check_nodes``), ``args`` (keyword arguments for the target, checked against its
        parameters), ``timeout`` and ``retry_backoff`` (seconds, a timedelta or text such as
        ``"5m"``), ``retries``, ``misfire``, ``enabled``.

        :param replace: replace an existing schedule of that name instead of failing
        :param check_nodes: check the executor against the live nodes, since a node parks a
            schedule whose executor it does not run: refused when a live node that publishes its
            executors lacks it (:mod:`tickwork.admin.liveexecutors`); when every live node runs
            it, this configuration need not configure it. With no live node (or only nodes of
            an older tickwork) this configuration must configure it. ``False``: this
            configuration alone decides, to add a schedule before the nodes run its executor.
        :raises tickwork.ScheduleExistsError: if the name is taken (and not ``replace``)
        :raises tickwork.ConfigError, tickwork.TriggerError, tickwork.ExecutorError: invalid input
        :raises TypeError: for a keyword that is no option
        """
        return self._write(self.spec(name, expression, target, check_nodes=check_nodes, **options), replace, by)

    def add_many(
        self,
        specs: Iterable[ScheduleSpec | Mapping[str, Any]],
        *,
        replace: bool = False,
        check_nodes: bool = True,
        live: LiveExecutors | None = None,
        by: str | None = None,
    ) -> builtins.list[ScheduleInfo]:
        """Add several schedules: each a :class:`ScheduleSpec` or a dict of :meth:`add`'s
        arguments. All are validated first, then written in one transaction with batched
        statements: either every schedule is added or none is.

        :param check_nodes: as :meth:`add` takes it
        :param live: the live nodes to check against, as read once by :meth:`live_executors`
            (default: read now)
        :param by: who writes them, kept with each version written (``jobs add --from``, an import)
        :raises tickwork.ScheduleExistsError: if a name is taken (and not ``replace``); nothing
            is written
        """
        if check_nodes and live is None:
            live = self.live_executors()  # read once for them all
        judge = live.judge if check_nodes and live is not None else None
        checked = [
            self.specs.check(s, run_by_nodes=judge)
            if isinstance(s, ScheduleSpec)
            else self.spec(**s, check_nodes=check_nodes, live=live)
            for s in specs
        ]
        counts = collections.Counter(s.key for s in checked)
        duplicates = sorted(n for (_ns, n), c in counts.items() if c > 1)
        if duplicates:
            raise ConfigError(f"add_many: schedule names given more than once: {', '.join(duplicates)}")
        written = schedules.add_many(self.store(write=True), checked, self.manager, replace=replace, by=by)
        last = self.store().last_runs([s.id for s in written]) if replace else {}
        return [ScheduleInfo.of(s, last.get(s.id)) for s in written]

    def _write(self, spec: ScheduleSpec, replace: bool, by: str | None) -> ScheduleInfo:
        store = self.store(write=True)
        if replace:
            try:
                current = store.get(spec.name, namespace=spec.namespace)
            except ScheduleNotFoundError:
                pass
            else:
                if current.spec.module is not None:
                    raise TickworkError(
                        f"schedule {spec.name!r} is declared in {current.spec.module}; "
                        "change the declaration, not the stored copy"
                    )
                return self._info(schedules.update(store, spec, self.manager, recompute=True, by=by))
        return self._info(schedules.add(store, spec, self.manager, by=by))

    def update(self, name: str, *, check_nodes: bool = True, by: str | None = None, **fields: Any) -> ScheduleInfo:
        """Change some fields of a schedule (the names :meth:`add` takes) and keep the rest. A
        change of its definition is its next version, written ``by`` whom; ``enabled`` alone
        (state) makes none.

        The next fire time is recomputed from now when the trigger (expression, kind, zone)
        changes or the schedule is enabled; otherwise it is kept, so a pending "run now" stays.
        A run in progress ends normally. The result is checked as :meth:`add` checks a schedule,
        its executor against the live nodes too (``check_nodes``).

        :raises tickwork.ScheduleNotFoundError: if there is no such schedule
        """
        unknown = sorted(set(fields) - set(UPDATABLE) - set(ALIASES))
        if unknown:
            raise ConfigError(f"update: unknown field(s) {', '.join(unknown)}; fields: {', '.join(UPDATABLE)}")
        store = self.store(write=True)
        current = store.get(name, namespace=self.named_in()).spec
        merged: dict[str, Any] = {"expression": current.expression, "target": current.target, **of_spec(current)}
        fields = {ALIASES.get(key, key): value for key, value in fields.items()}
        if "expression" in fields and "kind" not in fields:
            merged["kind"] = None  # recognise the new expression's kind
        merged.update(fields)
        spec = self.spec(name, module=current.module, check_nodes=check_nodes, namespace=current.namespace, **merged)
        trigger_changed = spec.times_key != current.times_key  # the trigger, or jitter, bounds, also, exclude
        recompute = trigger_changed or (spec.enabled and not current.enabled)
        return self._info(schedules.update(store, spec, self.manager, recompute=recompute, by=by))

    def enable(self, name: str) -> ScheduleInfo:
        """Enable a schedule; its next fire is computed from now (time spent disabled is not caught up)."""
        store = self.store(write=True)
        return self._info(schedules.set_enabled(store, name, True, self.manager, namespace=self.named_in()))

    def disable(self, name: str) -> ScheduleInfo:
        store = self.store(write=True)
        return self._info(schedules.set_enabled(store, name, False, self.manager, namespace=self.named_in()))

    def pause(
        self, name: str, note: str, *, until: datetime | timedelta | None = None, by: str | None = None
    ) -> ScheduleInfo:
        """Disable a schedule with a reason: ``jobs show``, ``jobs list --json`` and the dashboard
        show ``note``, ``by``, when it was paused and ``until``. A pause with ``until`` (a time,
        or a duration from now by the database clock) ends by itself: a node's housekeeping
        enables the schedule again once the database clock passed it, its next fire computed
        from then (the fires meanwhile are not caught up). :meth:`resume` ends it before.

        :raises tickwork.ScheduleNotFoundError: if there is no such schedule
        :raises tickwork.ConfigError: for an empty note or an ``until`` not in the future
        """
        if not isinstance(note, str) or not note.strip():
            raise ConfigError("pause: give a note saying why (it is shown with the schedule)")
        store = self.store(write=True)
        ends: datetime | None = None
        if isinstance(until, timedelta):
            ends = store.now() + until
        elif until is not None:
            ends = utc(until)
        if ends is not None and ends <= store.now():
            raise ConfigError(f"pause: --until {iso_z(ends)} has passed already (database clock)")
        paused = schedules.pause(store, name, Pause(note.strip(), by=by, until=ends), namespace=self.named_in())
        return self._info(paused)

    def resume(self, name: str) -> ScheduleInfo:
        """End a pause (or a plain disable): :meth:`enable`."""
        return self.enable(name)

    def enable_many(self, names: Iterable[str]) -> builtins.list[ScheduleInfo]:
        """Enable several schedules in one transaction, all or none (a name given twice counts
        once); each next fire is computed from now, as :meth:`enable` does.

        :raises tickwork.ScheduleNotFoundError: naming every name that has no schedule; nothing is changed
        """
        return self._set_enabled_many(names, True)

    def disable_many(self, names: Iterable[str]) -> builtins.list[ScheduleInfo]:
        """Disable several schedules in one transaction, all or none (see :meth:`enable_many`)."""
        return self._set_enabled_many(names, False)

    def _set_enabled_many(self, names: Iterable[str], enabled: bool) -> builtins.list[ScheduleInfo]:
        unique = _names(names, "enable_many" if enabled else "disable_many")
        if not unique:
            return []
        written = schedules.set_enabled_many(
            self.store(write=True), unique, enabled, self.manager, namespace=self.named_in()
        )
        last = self.store().last_runs([s.id for s in written])
        return [ScheduleInfo.of(s, last.get(s.id)) for s in written]

    def trigger(self, name: str) -> ScheduleInfo:
        """Make a schedule due now (by the database clock): a node runs it at once.

        :raises tickwork.TickworkError: if it is disabled (a disabled schedule is never run)
        """
        store = self.store(write=True)
        if not store.get(name, namespace=self.named_in()).spec.enabled:
            raise TickworkError(f"schedule {name!r} is disabled; enable it first (tickwork jobs enable)")
        return self._info(store.fire_now(name, namespace=self.named_in()))

    def release(self, name: str, *, by: str | None = None) -> builtins.list[RunRecord]:
        """Release the hand-offs of ``name`` no worker started (``submitted`` runs, a stuck one
        among them): each ends ``cancelled``, its history row naming ``by`` (who released it),
        and the schedule's next fire is handed off again. Fenced by the run's status: a run a
        worker started meanwhile is not released, and a worker taking a released run's message
        later does not run it (docs/handoff.md#stuck-hand-offs). Returns the runs released
        (empty: nothing was waiting).

        :raises tickwork.ScheduleNotFoundError: if there is no such schedule
        """
        reason = (
            f"released by {by or 'an unnamed operator'}: no worker had reported it started; a worker "
            "taking its message later does not run it"
        )
        return self.store(write=True).release_handoffs(name, reason, namespace=self.named_in())

    def remove(self, name: str) -> ScheduleInfo:
        """Delete a schedule and its history; returns it as it was. A schedule declared in code
        (``.module`` set) comes back at the next node start unless its declaration is removed."""
        store = self.store(write=True)
        before = self._info(store.get(name, namespace=self.named_in()))
        store.remove(name, namespace=self.named_in())
        return before

    def remove_many(self, names: Iterable[str]) -> builtins.list[ScheduleInfo]:
        """Delete several schedules and their history in one transaction: either every one is
        removed or none is. A name given twice counts once. Returns them as they were (without
        their last run, which went with the history), in the order given. Declared ones come
        back at the next node start unless their declarations are removed.

        :raises tickwork.ScheduleNotFoundError: naming every name that has no schedule (``.names``);
            nothing is removed
        """
        unique = _names(names, "remove_many")
        if not unique:
            return []
        removed = schedules.remove_many(self.store(write=True), unique, namespace=self.named_in())
        return [ScheduleInfo.of(s, None) for s in removed]

    # -- validation -----------------------------------------------------------------------------

    def spec(
        self,
        name: str,
        expression: str,
        target: str,
        *,
        module: str | None = None,
        check_nodes: bool = True,
        live: LiveExecutors | None = None,
        namespace: str | None = None,
        **options: Unpack[ScheduleOptions],
    ) -> ScheduleSpec:
        """Build and check the :class:`ScheduleSpec` that :meth:`add` would store (same
        arguments; ``live`` as :meth:`add_many` takes it; ``namespace``: this admin's unless
        given, as a schedule file's entry may)."""
        judge = None
        if check_nodes:
            judge = (live or self.live_executors()).judge
        return self.specs.build(
            name,
            expression,
            target,
            module=module,
            run_by_nodes=judge,
            namespace=namespace or self.named_in(),
            **options,
        )

    def _info(self, schedule: Schedule) -> ScheduleInfo:
        # One schedule written: with its health, like get(). The bulk writes (add_many,
        # enable_many, ...) return none: assessing 70,000 written schedules is not their job.
        store = self.store()
        health = health_of(store, [schedule], self.health_policy)[schedule.id]
        return ScheduleInfo.of(schedule, store.last_runs([schedule.id]).get(schedule.id), health)


def _names(names: Iterable[str], method: str) -> list[str]:
    """``names`` in order, each once; a lone string is refused (it would be read as its letters)."""
    if isinstance(names, str):
        raise ConfigError(f"{method}: expected a list of names, got the string {names!r}")
    return list(dict.fromkeys(names))
