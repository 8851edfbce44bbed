"""Writing schedules: add, update, the batched write of a deployment sync, enable, "run now", remove."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Insert,
    Row,
    Update,
    case,
    delete,
    func,
    insert,
    literal,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from ..abc.storeroles import namespace_growth
from ..errors import (
    ScheduleExistsError,
    ScheduleNotFoundError,
)
from ..structures import (
    DEFAULT_NAMESPACE,
    Pause,
    Schedule,
    ScheduleKey,
    SchedulePlan,
    ScheduleSpec,
)
from . import bulk, namespacelimits, versioning
from .pausing import PAUSE_CLEARED, pause_values
from .retry import transient_retry
from .rows import next_fire_values, schedule_from_row, spec_values
from .schema import backfills, named, runs, schedules
from .storecore import SQLCore


class ScheduleWriting(SQLCore):
    """Writing schedules: add, update, the batched write of a deployment sync, enable, "run now", remove."""

    def _written(
        self, conn: Connection, write: Insert | Update, name: str, namespace: str, returning: bool
    ) -> Row[Any] | None:
        """The row of schedule ``name`` (of ``namespace``) as ``write`` left it: returned by the write where the
        database can (``returning``), else read after it in the same transaction. ``None``:
        the write changed no row."""
        if returning:
            return conn.execute(write.returning(*schedules.c)).first()
        if not conn.execute(write).rowcount:
            return None
        return conn.execute(select(schedules).where(*named(name, namespace))).first()

    def add(self, spec: ScheduleSpec, next_fire: datetime | None, *, by: str | None = None) -> Schedule:
        now = self.now_expr()
        values = spec_values(spec) | {"next_fire": next_fire, "created_at": now, "updated_at": now, "version": 1}
        returning = self.features.insert_returning
        try:
            with self._tx() as conn:
                namespacelimits.check_room(self, conn, {spec.namespace: 1})
                row = self._written(conn, insert(schedules).values(**values), spec.name, spec.namespace, returning)
                assert row is not None
                versioning.record(self, conn, versioning.diffs([(spec, None)]), by)
                self._notify(conn)
        except IntegrityError as exc:
            raise ScheduleExistsError(spec.name) from exc
        return schedule_from_row(row)

    def update(
        self, spec: ScheduleSpec, next_fire: datetime | None, *, retime: bool = True, by: str | None = None
    ) -> Schedule:
        # A new definition is a fix: a parked schedule fires again. A next fire chosen while a
        # claim holds the row waits for the claim's release (next_fire_values).
        values = spec_values(spec) | {"updated_at": self.now_expr(), "fault": None, "fault_kind": None}
        if retime:
            values |= next_fire_values(next_fire)
        if spec.enabled:
            values |= PAUSE_CLEARED  # enabled: no longer paused
        with self._tx() as conn:
            # The definition it replaces, locked until the version is written: two writers at
            # once number their versions one after the other.
            before = conn.execute(select(schedules).where(*named(spec.name, spec.namespace)).with_for_update()).first()
            if before is None:
                raise ScheduleNotFoundError(spec.name)
            changed = versioning.diffs([(spec, schedule_from_row(before).spec)])
            if changed:
                values |= {"version": schedules.c.version + 1}
            write = update(schedules).where(*named(spec.name, spec.namespace)).values(**values)
            row = self._written(conn, write, spec.name, spec.namespace, self.features.update_returning)
            if row is None:
                raise ScheduleNotFoundError(spec.name)
            versioning.record(self, conn, changed, by)
            self._notify(conn)
        return schedule_from_row(row)

    @transient_retry
    def write_schedules(
        self,
        plan: Callable[[Sequence[Schedule]], SchedulePlan],
        next_fire: Callable[[ScheduleSpec, datetime], datetime | None],
        *,
        by: str | None = None,
    ) -> SchedulePlan:
        # One transaction: the plan is made from rows that cannot change before it is written
        # (the dialect's lock serializes two nodes starting at once), and a refused plan writes
        # nothing.
        try:
            with self._tx() as conn:
                self.lock_schedule_writes(conn)
                stored = [
                    schedule_from_row(r)
                    for r in conn.execute(select(schedules).order_by(schedules.c.namespace, schedules.c.name))
                ]
                applied = plan(stored)
                before = {s.key: s.spec for s in stored}
                written: list[tuple[ScheduleSpec, ScheduleSpec | None]] = [(s, None) for s in applied.create]
                written += [(s, before.get(s.key)) for s in (*applied.update, *applied.retrigger)]
                namespacelimits.check_room(self, conn, namespace_growth(stored, applied))
                changed = versioning.diffs(written)
                created = bulk.insert_schedules(self, conn, applied.create, next_fire, spec_values)
                bulk.update_schedules(self, conn, applied.update, None, spec_values, changed)
                bulk.update_schedules(self, conn, applied.retrigger, next_fire, spec_values, changed)
                bulk.delete_schedules(conn, applied.remove)
                versioning.record(self, conn, changed, by, created)
                # After the versions moved: the numbers the apply leaves them at.
                bulk.mark_applied(conn, applied.applied)
                if applied.create or applied.update or applied.retrigger or applied.remove:
                    self._notify(conn)
        except IntegrityError as exc:
            raise ScheduleExistsError(str(exc.orig)) from exc
        return applied

    @transient_retry
    def mark_applied(self, keys: Sequence[ScheduleKey]) -> None:
        with self._tx() as conn:
            bulk.mark_applied(conn, keys)

    @transient_retry
    def get(self, name: str, *, namespace: str = DEFAULT_NAMESPACE) -> Schedule:
        with self._tx() as conn:
            row = conn.execute(select(schedules).where(*named(name, namespace))).first()
        if row is None:
            raise ScheduleNotFoundError(name)
        return schedule_from_row(row)

    @transient_retry
    def list_schedules(self, *, module: str | None = None, namespace: str | None = None) -> list[Schedule]:
        query = select(schedules).order_by(schedules.c.name, schedules.c.namespace)
        if module is not None:
            query = query.where(schedules.c.module == module)
        if namespace is not None:
            query = query.where(schedules.c.namespace == namespace)
        with self._tx() as conn:
            return [schedule_from_row(row) for row in conn.execute(query)]

    def schedule_counts(self) -> dict[str, int]:
        """How many schedules are ``idle``, ``running`` and ``disabled`` (one grouped query; the
        metrics plugin's ``tickwork_schedules{state}``)."""
        state = case((schedules.c.enabled.is_(False), literal("disabled")), else_=schedules.c.state)
        counts = {"idle": 0, "running": 0, "disabled": 0}
        with self._tx() as conn:
            for name, count in conn.execute(select(state, func.count()).group_by(state)):
                counts[str(name)] = int(count)
        return counts

    def remove(self, name: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        with self._tx() as conn:
            schedule_id = conn.scalar(select(schedules.c.id).where(*named(name, namespace)))
            if schedule_id is None:
                raise ScheduleNotFoundError(name)
            # Explicit, so SQLite does not depend on PRAGMA foreign_keys for the cascade.
            conn.execute(delete(runs).where(runs.c.schedule_id == schedule_id))
            conn.execute(delete(backfills).where(backfills.c.schedule_id == schedule_id))
            versioning.forget(conn, [schedule_id])
            conn.execute(delete(schedules).where(schedules.c.id == schedule_id))
            self._notify(conn)

    def set_enabled(
        self,
        name: str,
        enabled: bool,
        next_fire: datetime | None,
        pause: Pause | None = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Schedule:
        now = self.now_expr()
        values: dict[str, Any] = {
            "enabled": enabled,
            "updated_at": now,
            "fault": None,
            "fault_kind": None,
        } | next_fire_values(next_fire)
        if enabled:
            values |= PAUSE_CLEARED
        elif pause is not None:
            values |= pause_values(pause, now)
        write = update(schedules).where(*named(name, namespace)).values(**values)
        returning = self.features.update_returning
        with self._tx() as conn:
            row = self._written(conn, write, name, namespace, returning)
            if row is None:
                raise ScheduleNotFoundError(name)
            self._notify(conn)
        return schedule_from_row(row)

    def fire_now(self, name: str, *, namespace: str = DEFAULT_NAMESPACE) -> Schedule:
        now = self.now_expr()
        returning = self.features.update_returning
        idle = update(schedules).where(*named(name, namespace), schedules.c.state == "idle")
        with self._tx() as conn:
            row = self._written(conn, idle.values(next_fire=now, updated_at=now), name, namespace, returning)
            if row is None:
                # Running: the end of the current run would overwrite next_fire, so leave a
                # request that the release honours (fires right after the current run).
                held = update(schedules).where(*named(name, namespace))
                row = self._written(
                    conn, held.values(fire_requested_at=now, updated_at=now), name, namespace, returning
                )
            if row is None:
                raise ScheduleNotFoundError(name)
            self._notify(conn)
        return schedule_from_row(row)
