"""The state of a :class:`~tickwork.testing.MemoryStore` and everything that is not the claim
protocol: schedules, nodes, history, notifications. The protocol itself is in memory.py."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import cast

from ..abc import Store
from ..abc.storeroles import PRUNE_BATCH, refuse_past_limits
from ..errors import ScheduleExistsError, ScheduleNotFoundError, StoreError
from ..scheduling.versions import changes, definition
from ..structures import (
    DEFAULT_NAMESPACE,
    Claim,
    NamespaceLimits,
    NodeRecord,
    Pause,
    RunRecord,
    RunStatus,
    Schedule,
    ScheduleKey,
    SchedulePlan,
    ScheduleSpec,
    ScheduleState,
    ScheduleVersion,
    cap_error,
    utc,
)
from .memory_rows import RunRow, ScheduleRow, stored_spec


def aware(value: datetime | None) -> datetime | None:
    # A SQL store refuses naive datetimes when binding them; so does this one.
    return None if value is None else utc(value)


class MemoryTables:
    """Tables, one lock, one clock; the store's non-protocol methods."""

    #: Set by the store (:attr:`tickwork.abc.Store.namespace_limits`).
    namespace_limits: Mapping[str, NamespaceLimits]

    def _init_tables(self, clock: Callable[[], datetime] | None) -> None:
        self.clock = clock
        self._lock = threading.RLock()
        self._open = False
        self._ids = itertools.count(1)
        self._run_ids = itertools.count(1)
        self._schedules: dict[int, ScheduleRow] = {}
        self._by_name: dict[ScheduleKey, int] = {}
        self._runs: dict[int, RunRow] = {}
        #: Invariant 1: (schedule, scheduled-for, attempt) -> the one run row for it.
        self._fires: dict[tuple[int, datetime, int], int] = {}
        self._nodes: dict[str, NodeRecord] = {}
        self._instances: dict[str, str] = {}
        #: What each node announced (Store.announce_executors), kept for a record made again.
        self._announced: dict[str, tuple[str, ...]] = {}
        self._wakes: list[Callable[[], None]] = []
        #: Each schedule's versions (``tickwork_schedule_versions``), by schedule id.
        self._versions: dict[int, list[ScheduleVersion]] = {}

    # -- helpers ----------------------------------------------------------------------------------

    def _drop_backfills(self, schedule_id: int) -> None:
        """A removed schedule's queued backfill times go with it (:class:`.memory_backfill.MemoryBackfills`)."""

    @contextmanager
    def _tx(self) -> Iterator[datetime]:
        """One "transaction": the lock held, and one clock reading for all of it (like a SQL
        statement's clock)."""
        with self._lock:
            if not self._open:
                raise StoreError("memory store is not open; call open() first")
            yield self._clock()

    def _clock(self) -> datetime:
        return utc(self.clock()) if self.clock is not None else datetime.now(UTC)

    def _row(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> ScheduleRow:
        sid = self._by_name.get((namespace, name))
        if sid is None:
            raise ScheduleNotFoundError(name)
        return self._schedules[sid]

    def _notify(self) -> None:
        for wake in self._wakes:
            wake()

    def _insert_run(self, run: RunRow) -> int | None:
        """Insert unless its fire is already recorded (``ON CONFLICT DO NOTHING``)."""
        if run.fire in self._fires:
            return None
        if run.version is None:
            run.version = self._schedules[run.schedule_id].version
        self._runs[run.id] = run
        self._fires[run.fire] = run.id
        return run.id

    def _delete_run(self, run_id: int) -> None:
        run = self._runs.pop(run_id)
        del self._fires[run.fire]

    def _held(self, claim: Claim) -> ScheduleRow | None:
        """The claim's schedule if the claim still holds it (the fence of invariant 3)."""
        row = self._schedules.get(claim.schedule_id)
        if row is None or row.claim_seq != claim.claim_seq or row.state is not ScheduleState.RUNNING:
            return None
        return row

    # -- lifecycle --------------------------------------------------------------------------------

    def open(self, *, check_schema: bool = True) -> None:
        with self._lock:
            self._open = True

    def close(self) -> None:
        """Stop answering; the data stays (open() again sees it, like a database file)."""
        with self._lock:
            self._open = False
            self._wakes.clear()

    def upgrade(self) -> None:
        """Nothing to migrate: the in-memory layout is always current."""

    def now(self) -> datetime:
        with self._tx() as now:
            return now

    # -- schedules --------------------------------------------------------------------------------

    def _version(self, row: ScheduleRow, before: ScheduleSpec | None, by: str | None, now: datetime) -> None:
        """Record ``row``'s new definition as its next version, if it changed from ``before``."""
        changed = changes(None if before is None else definition(before), definition(row.spec))
        if not changed:
            return
        row.version += 1
        self._versions.setdefault(row.id, []).append(
            ScheduleVersion(row.spec.name, row.version, now, by, changed, definition(row.spec))
        )

    def add(self, spec: ScheduleSpec, next_fire: datetime | None, *, by: str | None = None) -> Schedule:
        with self._tx() as now:
            if spec.key in self._by_name:
                raise ScheduleExistsError(spec.name)
            if spec.namespace in self.namespace_limits:
                # Only the namespace's own rows count, and only when it has limits: copying
                # every row on every add made a write of 2,500 schedules quadratic (40 s).
                held = [r.public() for r in self._schedules.values() if r.spec.namespace == spec.namespace]
                refuse_past_limits(self.namespace_limits, held, SchedulePlan(create=(spec,)))
            row = ScheduleRow(next(self._ids), stored_spec(spec), aware(next_fire), now, now)
            self._schedules[row.id] = row
            self._by_name[spec.key] = row.id
            self._version(row, None, by, now)
            self._notify()
            return row.public()

    def update(
        self, spec: ScheduleSpec, next_fire: datetime | None, *, retime: bool = True, by: str | None = None
    ) -> Schedule:
        with self._tx() as now:
            row = self._row(spec.name, spec.namespace)
            before = row.spec
            row.spec, row.updated_at, row.fault, row.fault_kind = stored_spec(spec), now, None, None
            self._version(row, before, by, now)
            if retime:
                row.choose_next_fire(aware(next_fire))
            if spec.enabled:
                row.resumed()
            self._notify()
            return row.public()

    def write_schedules(
        self,
        plan: Callable[[Sequence[Schedule]], SchedulePlan],
        next_fire: Callable[[ScheduleSpec, datetime], datetime | None],
        *,
        by: str | None = None,
    ) -> SchedulePlan:
        # The lock held throughout: two writers are serialized like the SQL store's, and the
        # plan sees exactly the rows it changes. Reentrant, so the row methods can be reused.
        with self._tx():
            return Store.write_schedules(cast(Store, self), plan, next_fire, by=by)

    def mark_applied(self, keys: Sequence[ScheduleKey]) -> None:
        with self._tx():
            for key in keys:
                sid = self._by_name.get(key)
                if sid is not None:
                    self._schedules[sid].applied_version = self._schedules[sid].version

    def versions(self, name: str, *, namespace: str = DEFAULT_NAMESPACE) -> list[ScheduleVersion]:
        with self._tx():
            return list(self._versions.get(self._row(name, namespace).id, []))

    def get(self, name: str, *, namespace: str = DEFAULT_NAMESPACE) -> Schedule:
        with self._tx():
            return self._row(name, namespace).public()

    def list_schedules(self, *, module: str | None = None, namespace: str | None = None) -> list[Schedule]:
        with self._tx():
            rows = sorted(self._schedules.values(), key=lambda r: (r.spec.name, r.spec.namespace))
            return [
                r.public()
                for r in rows
                if (module is None or r.spec.module == module) and (namespace is None or r.spec.namespace == namespace)
            ]

    def remove(self, name: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        with self._tx():
            row = self._row(name, namespace)
            for run in [r for r in self._runs.values() if r.schedule_id == row.id]:
                self._delete_run(run.id)
            del self._schedules[row.id], self._by_name[row.spec.key]
            self._versions.pop(row.id, None)
            self._drop_backfills(row.id)
            self._notify()

    def set_enabled(
        self,
        name: str,
        enabled: bool,
        next_fire: datetime | None,
        pause: Pause | None = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Schedule:
        with self._tx() as now:
            row = self._row(name, namespace)
            row.spec, row.updated_at = replace(row.spec, enabled=enabled), now
            row.choose_next_fire(aware(next_fire))
            row.fault = row.fault_kind = None
            if enabled:
                row.resumed()
            elif pause is not None:
                row.pause = replace(pause, note=cap_error(pause.note, 1000) or "", at=now)
            self._notify()
            return row.public()

    def fire_now(self, name: str, *, namespace: str = DEFAULT_NAMESPACE) -> Schedule:
        with self._tx() as now:
            row = self._row(name, namespace)
            if row.state is ScheduleState.IDLE:
                row.next_fire = now
            else:
                # The end of the current run would overwrite next_fire: leave a request instead.
                row.fire_requested_at = now
            row.updated_at = now
            self._notify()
            return row.public()

    # -- nodes ------------------------------------------------------------------------------------

    def heartbeat(self, node_id: str) -> datetime:
        with self._tx() as now:
            known = self._nodes.get(node_id)
            started = known.started_at if known else now
            self._nodes[node_id] = NodeRecord(node_id, started, now, self._announced.get(node_id))
            return now

    def announce_executors(self, node_id: str, executors: Sequence[str]) -> None:
        with self._tx():
            self._announced[node_id] = names = tuple(sorted(set(executors)))
            known = self._nodes.get(node_id)
            if known is not None:
                self._nodes[node_id] = replace(known, executors=names)

    def nodes(self) -> list[NodeRecord]:
        with self._tx():
            return [self._nodes[k] for k in sorted(self._nodes)]

    def remove_node(self, node_id: str) -> None:
        with self._tx():
            self._nodes.pop(node_id, None)

    # -- history and notifications ----------------------------------------------------------------

    def history(self, *, limit: int = 50, schedule: str | None = None, namespace: str | None = None) -> list[RunRecord]:
        with self._tx():
            keys = {r.id: r.spec.key for r in self._schedules.values()}
            newest = sorted(self._runs.values(), key=lambda r: r.id, reverse=True)
            chosen = [
                r
                for r in newest
                if (schedule is None or keys[r.schedule_id][1] == schedule)
                and (namespace is None or keys[r.schedule_id][0] == namespace)
            ]
            return [r.public(keys[r.schedule_id][1], keys[r.schedule_id][0]) for r in chosen[:limit]]

    def prune_history(self, older_than: timedelta, *, limit: int = PRUNE_BATCH) -> int:
        """Delete at most ``limit`` finished runs that finished more than ``older_than`` ago
        (store clock), lowest ids first."""
        with self._tx() as now:
            cutoff = now - older_than
            next_fires = {s.id: s.next_fire for s in self._schedules.values()}

            def fences_a_fire(r: RunRow) -> bool:
                # At or after its schedule's next fire (an abandoned fire released with its fire
                # time unchanged): the row keeps that fire from running again. Kept, however old.
                next_fire = next_fires.get(r.schedule_id)
                return next_fire is not None and next_fire <= r.scheduled_for

            old = sorted(
                r.id
                for r in self._runs.values()
                if r.status is not RunStatus.RUNNING
                and r.finished_at is not None
                and r.finished_at < cutoff
                and not fences_a_fire(r)
            )[:limit]
            for run_id in old:
                self._delete_run(run_id)
            return len(old)

    def listen(self, wake: Callable[[], None]) -> None:
        with self._lock:
            self._wakes.append(wake)

    def describe(self) -> str:
        return "memory store"

    def __repr__(self) -> str:
        return f"MemoryStore(schedules={len(self._schedules)}, runs={len(self._runs)})"
