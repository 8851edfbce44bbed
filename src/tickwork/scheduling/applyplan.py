"""What ``tickwork apply`` would change (docs/schedules-in-git.md): the schedules of the files
compared with the stored ones, as an :class:`ApplyPlan` (to add, to change field by field, to
remove with ``prune``, declared ones left alone, drift) and the :class:`SchedulePlan` that
writes it. Pure: the caller reads the stored schedules (inside the write's transaction when it
applies) and the versions that tell who drifted a schedule.

Rules:

- a name no stored schedule has is added, with the file's definition and state (``enabled``);
- a run-time schedule whose definition (:func:`~tickwork.scheduling.versions.definition`)
  differs is changed; its next fire is recomputed when its trigger changed (as a declaration's
  sync does), else kept. ``enabled`` and a pause are state: apply never changes them on a stored
  schedule, and says so when the file's ``enabled`` differs;
- a schedule declared in code (``module`` set) is never touched: listed as left alone;
- with ``prune``, every run-time schedule no file names is removed;
- every run-time schedule the files name is recorded as applied at the version the write leaves
  it at (``Schedule.applied_version``); one whose version moved past its applied one since was
  changed by something else: drift, named with the versions that did it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..structures import DEFAULT_NAMESPACE, Schedule, SchedulePlan, ScheduleSpec, ScheduleVersion, iso_z
from .versions import changes, definition

#: The ``by`` of the versions an apply writes: ``apply:`` and who ran it.
BY_PREFIX = "apply:"


def applied_by(who: str | None) -> str:
    """The author an apply's versions carry (``apply:alice``): an apply's writes read apart from
    the CLI's, the API's and the dashboard's in ``jobs versions``."""
    return f"{BY_PREFIX}{who or 'unknown'}"


@dataclass(frozen=True)
class Change:
    """A stored run-time schedule whose definition the files change: each changed field's old
    and new value (JSON), and whether its next fire is recomputed (its trigger changed)."""

    name: str
    fields: dict[str, dict[str, Any]]
    retrigger: bool

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "fields": self.fields, "retrigger": self.retrigger}


@dataclass(frozen=True)
class Drift:
    """A schedule changed since the last apply by something else: its version moved from the one
    the apply left (``applied_version``) to ``version``; ``versions`` are the versions between
    (who, when, what), oldest first."""

    name: str
    applied_version: int
    version: int
    versions: tuple[ScheduleVersion, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "applied_version": self.applied_version,
            "version": self.version,
            "changed_by": [
                {"version": v.version, "at": iso_z(v.at), "by": v.by, "changes": v.changes} for v in self.versions
            ],
        }

    def who(self) -> str:
        """Who changed it and when, in words: ``alice at 2026-11-30T10:00:00Z (version 4)``."""
        if not self.versions:
            return f"version {self.applied_version} -> {self.version} (no recorded versions say by whom)"
        return ", ".join(f"{v.by or 'an unnamed writer'} at {iso_z(v.at)} (version {v.version})" for v in self.versions)


@dataclass(frozen=True)
class ApplyPlan:
    """What an apply changes in ``namespace``; :attr:`pending`: whether it writes anything."""

    namespace: str
    add: tuple[ScheduleSpec, ...] = ()
    change: tuple[Change, ...] = ()
    #: Run-time schedules no file names (only with ``prune``).
    remove: tuple[str, ...] = ()
    #: Named run-time schedules whose definition is as the files say but whose applied version
    #: moves: never applied before, or drifted and then changed to what the files say.
    adopt: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    #: Names the files give that are declared in code, each with its module: left alone.
    declared: tuple[tuple[str, str], ...] = ()
    drift: tuple[Drift, ...] = ()
    #: State the files would set and apply leaves alone (``enabled`` on a stored schedule).
    notes: tuple[str, ...] = ()
    write: SchedulePlan = field(default_factory=SchedulePlan)

    @property
    def pending(self) -> bool:
        """Whether applying writes anything (``apply --plan`` exits 2 then, 0 otherwise)."""
        return bool(self.add or self.change or self.remove or self.adopt)

    def with_drift(self, drift: Mapping[str, Drift]) -> ApplyPlan:
        """This plan with the versions of its drifted schedules (read after the plan was made)."""
        return replace(self, drift=tuple(drift.get(d.name, d) for d in self.drift))

    def counts(self) -> dict[str, int]:
        return {
            "add": len(self.add),
            "change": len(self.change),
            "remove": len(self.remove),
            "adopt": len(self.adopt),
            "unchanged": len(self.unchanged),
            "declared": len(self.declared),
            "drift": len(self.drift),
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "pending": self.pending,
            "counts": self.counts(),
            "add": [{"name": s.name, "definition": definition(s), "enabled": s.enabled} for s in self.add],
            "change": [c.as_json() for c in self.change],
            "remove": list(self.remove),
            "adopt": list(self.adopt),
            "unchanged": list(self.unchanged),
            "declared": [{"name": name, "module": module} for name, module in self.declared],
            "drift": [d.as_json() for d in self.drift],
            "notes": list(self.notes),
        }


def make_plan(
    specs: Sequence[ScheduleSpec], stored: Sequence[Schedule], *, prune: bool, namespace: str = DEFAULT_NAMESPACE
) -> ApplyPlan:
    """The plan of applying ``specs`` (run-time specs, validated, names unique) to ``stored`` (the
    schedules of ``namespace``). Drift carries no versions yet (:meth:`ApplyPlan.with_drift`)."""
    by_name = {s.name: s for s in stored}
    add: list[ScheduleSpec] = []
    update: list[ScheduleSpec] = []
    retrigger: list[ScheduleSpec] = []
    change: list[Change] = []
    adopt: list[str] = []
    unchanged: list[str] = []
    declared: list[tuple[str, str]] = []
    notes: list[str] = []
    for spec in specs:
        current = by_name.get(spec.name)
        if current is None:
            add.append(spec)
            continue
        if current.spec.module is not None:
            declared.append((spec.name, current.spec.module))
            continue
        if spec.enabled != current.spec.enabled:
            notes.append(_state_note(spec, current))
        wanted = replace(spec, enabled=current.spec.enabled)  # state stays as it is
        fields = changes(definition(current.spec), definition(wanted))
        if fields:
            # A new trigger starts from now, and so does a schedule with no next fire that gets
            # one (a parked one: its new definition is the fix; one past an old max_runs).
            again = wanted.times_key != current.spec.times_key or current.fault is not None or current.next_fire is None
            again = again and wanted.enabled
            (retrigger if again else update).append(wanted)
            change.append(Change(spec.name, fields, again))
        elif current.applied_version != current.version:
            adopt.append(spec.name)
        else:
            unchanged.append(spec.name)
    named = {spec.name for spec in specs}
    remove = [s.name for s in stored if prune and s.spec.module is None and s.name not in named]
    scope = {*named, *remove}
    drift = [
        Drift(s.name, s.applied_version, s.version)
        for s in stored
        if s.name in scope and s.spec.module is None and s.applied_version is not None and s.version > s.applied_version
    ]
    write = SchedulePlan(
        create=tuple(add),
        update=tuple(update),
        retrigger=tuple(retrigger),
        remove=tuple((namespace, name) for name in remove),
        applied=tuple(sorted((namespace, n) for n in {*(s.name for s in add), *(c.name for c in change), *adopt})),
    )
    return ApplyPlan(
        namespace=namespace,
        add=tuple(add),
        change=tuple(change),
        remove=tuple(remove),
        adopt=tuple(adopt),
        unchanged=tuple(unchanged),
        declared=tuple(declared),
        drift=tuple(drift),
        notes=tuple(notes),
        write=write,
    )


def _state_note(spec: ScheduleSpec, current: Schedule) -> str:
    if current.spec.enabled:
        return (
            f"{spec.name}: enabled in the store, enabled = false in the file; apply leaves state alone (jobs disable)"
        )
    why = f" (paused by {current.pause.by or 'someone'}: {current.pause.note})" if current.pause is not None else ""
    return f"{spec.name}: disabled in the store{why}, enabled in the file; apply leaves state alone (jobs resume)"
