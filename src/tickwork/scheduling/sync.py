"""Schedule administration shared by the CLI, the engine and library users: adding, enabling and
syncing declared jobs. Computes fire times from the database clock; the store only persists."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from ..abc import Store
from ..errors import DeclarationError, ScheduleExistsError, ScheduleNotFoundError, TickworkError
from ..plugin.manager import PluginManager
from ..structures import DEFAULT_NAMESPACE, Pause, Schedule, ScheduleKey, SchedulePlan, ScheduleSpec
from .declare import DeclaredJob
from .firetimes import fire_times
from .triggers import check_period, get_trigger
from .versions import CODE

log = logging.getLogger("tickwork.schedules")


def first_fire(spec: ScheduleSpec, now: datetime, manager: PluginManager | None = None) -> datetime | None:
    """The first fire after ``now``; refuses a trigger that fires less than a second apart."""
    trigger = get_trigger(spec.trigger_kind, spec.expression, spec.timezone, manager)
    check_period(trigger, now)
    return fire_times(spec, manager).next_after(now)


def add(store: Store, spec: ScheduleSpec, manager: PluginManager | None = None, *, by: str | None = None) -> Schedule:
    """Validate the trigger and create the schedule, first due at its next fire after now
    (version 1, written ``by`` whom)."""
    next_fire = first_fire(spec, store.now(), manager) if spec.enabled else None
    return store.add(spec, next_fire, by=by)


def update(
    store: Store, spec: ScheduleSpec, manager: PluginManager | None = None, *, recompute: bool, by: str | None = None
) -> Schedule:
    """Replace a schedule's definition (a new version when it changed, written ``by`` whom).
    With ``recompute`` (a new trigger, or enabling) the next fire is the first after now;
    otherwise the stored one is kept, so a pending "run now" stays."""
    stored = store.get(spec.name, namespace=spec.namespace)
    if not spec.enabled or _finished(stored.run_count, spec):
        # Checked as an enabled one is (a trigger whose exclusions match every fire, one firing
        # less than a second apart): refused now, not when it is enabled or its pause expires,
        # where it would fail the node's resume of every expired pause with it.
        first_fire(spec, store.now(), manager)
        return store.update(spec, None, by=by)
    if recompute or stored.next_fire is None:
        return store.update(spec, first_fire(spec, store.now(), manager), by=by)
    # Kept by the store, not written back from this read: a run may have ended meanwhile.
    return store.update(spec, None, retime=False, by=by)


def add_many(
    store: Store,
    specs: Sequence[ScheduleSpec],
    manager: PluginManager | None = None,
    *,
    replace: bool = False,
    by: str | None = None,
) -> list[Schedule]:
    """Create run-time schedules in one :meth:`Store.write_schedules` call: all or none.

    With ``replace``, an existing run-time schedule of the same name gets the new definition
    and a next fire recomputed from now; a declared one is never replaced.

    :raises tickwork.errors.ScheduleExistsError: a name is taken (and not ``replace``)
    :raises tickwork.errors.TickworkError: ``replace`` would overwrite a declared job
    """

    counts: dict[ScheduleKey, int] = {}

    def plan(stored: Sequence[Schedule]) -> SchedulePlan:
        by_key = {s.key: s for s in stored}
        counts.update({s.key: s.run_count for s in stored})
        create: list[ScheduleSpec] = []
        replaced: list[ScheduleSpec] = []
        # Every conflict at once: an import of 10 names with 3 taken says the 3, not one per try.
        taken: list[str] = []
        declared: list[Schedule] = []
        for spec in specs:
            current = by_key.get(spec.key)
            if current is None:
                create.append(spec)
            elif not replace:
                taken.append(spec.name)
            elif current.spec.module is not None:
                declared.append(current)
            else:
                replaced.append(spec)
        if taken:
            raise ScheduleExistsError(*taken)
        if len(declared) == 1:
            raise TickworkError(
                f"schedule {declared[0].name!r} is declared in {declared[0].spec.module}; "
                "change the declaration, not the stored copy"
            )
        if declared:
            modules = sorted({str(s.spec.module) for s in declared})
            raise TickworkError(
                f"schedules {', '.join(repr(s.name) for s in declared)} are declared in code "
                f"({', '.join(modules)}); change the declarations, not the stored copies"
            )
        return SchedulePlan(create=tuple(create), retrigger=tuple(replaced))

    store.write_schedules(plan, first_fires(manager, counts), by=by)
    return _read_back(store, [spec.key for spec in specs])


def remove_many(store: Store, names: Sequence[str], *, namespace: str = DEFAULT_NAMESPACE) -> list[Schedule]:
    """Delete schedules and their history in one :meth:`Store.write_schedules` call: all or
    none. Returns them as they were, in the order of ``names``.

    :raises tickwork.errors.ScheduleNotFoundError: naming every name not stored; nothing is
        removed
    """
    removed: list[Schedule] = []

    def plan(stored: Sequence[Schedule]) -> SchedulePlan:
        removed[:] = _named(stored, names, namespace)
        return SchedulePlan(remove=tuple((namespace, name) for name in names))

    def no_fire(spec: ScheduleSpec, now: datetime) -> datetime | None:
        return None  # nothing is created or retriggered

    store.write_schedules(plan, no_fire)
    return removed


def set_enabled_many(
    store: Store,
    names: Sequence[str],
    enabled: bool,
    manager: PluginManager | None = None,
    *,
    namespace: str = DEFAULT_NAMESPACE,
) -> list[Schedule]:
    """Enable or disable schedules in one :meth:`Store.write_schedules` call: all or none.
    Enabling computes each next fire from the database clock read when its batch is written
    (time spent disabled is not caught up); disabling clears it. Like :func:`set_enabled`, either
    also clears a parked schedule's fault.

    :raises tickwork.errors.ScheduleNotFoundError: naming every name not stored; nothing is
        written
    """

    counts: dict[ScheduleKey, int] = {}

    def plan(stored: Sequence[Schedule]) -> SchedulePlan:
        counts.update({s.key: s.run_count for s in stored})
        chosen = _named(stored, names, namespace)
        return SchedulePlan(retrigger=tuple(replace(s.spec, enabled=enabled) for s in chosen))

    store.write_schedules(plan, first_fires(manager, counts))
    return _read_back(store, [(namespace, name) for name in names])


def _named(stored: Sequence[Schedule], names: Sequence[str], namespace: str) -> list[Schedule]:
    """The stored schedules of ``names`` in ``namespace``, in that order.

    :raises tickwork.errors.ScheduleNotFoundError: naming every name not stored
    """
    by_name = {s.name: s for s in stored if s.namespace == namespace}
    missing = [name for name in names if name not in by_name]
    if missing:
        raise ScheduleNotFoundError(*missing)
    return [by_name[name] for name in names]


def first_fires(
    manager: PluginManager | None, run_counts: dict[ScheduleKey, int] | None = None
) -> Callable[[ScheduleSpec, datetime], datetime | None]:
    """``next_fire`` for :meth:`Store.write_schedules`: an enabled spec's first fire after ``now``
    (none for one that ran its ``max_runs``, by ``run_counts``: key -> fires it ran)."""
    # The specs of a write batch share one clock reading, and most share what decides their
    # fire times (``times_key``): each first fire is computed once per both (a first sync of
    # 20,000 declared jobs computed the same one 20,000 times). Not with jitter: its offset
    # comes from the name.
    known: dict[tuple[tuple[object, ...], datetime], datetime | None] = {}

    def next_fire(spec: ScheduleSpec, now: datetime) -> datetime | None:
        if not spec.enabled or _finished((run_counts or {}).get(spec.key, 0), spec):
            return None
        if spec.jitter:
            return first_fire(spec, now, manager)
        key = (spec.times_key, now)
        if key not in known:
            known[key] = first_fire(spec, now, manager)
        return known[key]

    return next_fire


def _read_back(store: Store, keys: Sequence[ScheduleKey]) -> list[Schedule]:
    """The schedules of ``keys`` as just written, in that order (those still stored)."""
    wanted = set(keys)
    written = {s.key: s for s in store.list_schedules() if s.key in wanted}
    return [written[key] for key in keys if key in written]


def set_enabled(
    store: Store,
    name: str,
    enabled: bool,
    manager: PluginManager | None = None,
    *,
    namespace: str = DEFAULT_NAMESPACE,
) -> Schedule:
    """Enabling computes the next fire from now (Docspell): time spent disabled is not caught up."""
    stored = store.get(name, namespace=namespace)
    finished = _finished(stored.run_count, stored.spec)
    next_fire = first_fire(stored.spec, store.now(), manager) if enabled and not finished else None
    return store.set_enabled(name, enabled, next_fire, namespace=namespace)


def _finished(run_count: int, spec: ScheduleSpec) -> bool:
    """Whether a schedule that ran ``run_count`` fires is done with ``spec``'s ``max_runs``: it
    gets no next fire from a change or from being enabled (a higher ``max_runs`` gives it one)."""
    return spec.max_runs is not None and run_count >= spec.max_runs


def pause(store: Store, name: str, how: Pause, *, namespace: str = DEFAULT_NAMESPACE) -> Schedule:
    """Disable a schedule with a note (and maybe an end: ``how.until``, by the database clock)."""
    return store.set_enabled(name, False, None, how, namespace=namespace)


def resume_expired(store: Store, manager: PluginManager | None = None) -> list[Schedule]:
    """Enable the schedules whose pause ended (a node's housekeeping); each next fire is computed
    from the database clock, like :func:`set_enabled`."""

    def next_fire(spec: ScheduleSpec, now: datetime) -> datetime | None:
        return first_fire(spec, now, manager)  # the stored spec is the disabled one

    return store.resume_expired(next_fire)


@dataclass
class SyncReport:
    module: str
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def sync_module(
    store: Store, module: str, jobs: Sequence[DeclaredJob], manager: PluginManager | None = None
) -> SyncReport:
    """Make the store hold exactly the jobs ``module`` declares (rules: docs/deployment-sync.md).

    - new names are created, first due at their next fire after the database clock read when
      they are written;
    - changed definitions are updated; the next fire time is kept unless the trigger changed, so
      a restart never double-fires;
    - ``enabled`` is run-time state: a declared job disabled from the CLI stays disabled;
    - stored schedules of this module (or its submodules) that are no longer declared are removed;
    - each created or changed definition is a version written by ``"code"``.

    Everything is compared in memory and written with :meth:`Store.write_schedules` (batched
    statements in one transaction for the SQL stores).
    """
    report = SyncReport(module)

    counts: dict[ScheduleKey, int] = {}

    def plan(stored: Sequence[Schedule]) -> SchedulePlan:
        report.created, report.updated, report.unchanged, report.removed = [], [], [], []
        by_key = {s.key: s for s in stored}
        counts.update({s.key: s.run_count for s in stored})
        create: list[ScheduleSpec] = []
        changed: list[ScheduleSpec] = []
        retrigger: list[ScheduleSpec] = []
        for job in jobs:
            spec = job.spec
            current = by_key.get(spec.key)
            if current is None:
                create.append(spec)
                continue
            if current.spec.module != spec.module:
                owner = current.spec.module or "the CLI (a run-time schedule)"
                raise DeclarationError(
                    f"{spec.target}: schedule name {spec.name!r} is already used by {owner}; choose another name="
                )
            # ``enabled`` is the stored one (run-time state); most declarations already agree,
            # and a replace() validates the whole spec again (20,000 of them on every start).
            wanted = spec if spec.enabled == current.spec.enabled else replace(spec, enabled=current.spec.enabled)
            if wanted == current.spec:
                report.unchanged.append(spec.name)
            elif (wanted.times_key != current.spec.times_key or current.fault is not None) and wanted.enabled:
                # A new trigger starts from now; so does a parked schedule (its new definition
                # is the fix). The store clears the fault and marks a running schedule retimed.
                retrigger.append(wanted)
            else:
                changed.append(wanted)
        declared = {job.spec.key for job in jobs}
        remove = [s.key for s in stored if s.spec.module and _under(s.spec.module, module) and s.key not in declared]
        report.created = [s.name for s in create]
        report.updated = sorted(s.name for s in (*changed, *retrigger))
        report.removed = [name for _namespace, name in remove]
        return SchedulePlan(tuple(create), tuple(changed), tuple(retrigger), tuple(remove))

    next_fire = first_fires(manager, counts)

    try:
        store.write_schedules(plan, next_fire, by=CODE)
    except ScheduleExistsError:
        # A store without a serializing lock, and another node created some of these names
        # between our read and our write: plan again from what it wrote.
        store.write_schedules(plan, next_fire, by=CODE)
    log.info(
        "synced %s: %d created, %d updated, %d unchanged, %d removed",
        module,
        len(report.created),
        len(report.updated),
        len(report.unchanged),
        len(report.removed),
    )
    return report


def _under(candidate: str, module: str) -> bool:
    return candidate == module or candidate.startswith(module + ".")
