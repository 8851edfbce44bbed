"""Batched schedule writes for :meth:`SQLStore.write_schedules <tickwork.sql.store.SQLStore.write_schedules>`
(deployment sync, ``Admin.add_many``): one statement per :data:`WRITE_BATCH` rows instead of one
transaction per schedule (20,000 declared jobs took ~110 s on PostgreSQL that way)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    Boolean,
    ColumnElement,
    Connection,
    Integer,
    bindparam,
    case,
    delete,
    func,
    select,
    tuple_,
    update,
)

from ..errors import ScheduleExistsError
from ..structures import ScheduleKey, ScheduleSpec
from .rows import next_fire_values
from .schema import UTCDateTime, backfills, runs, schedule_versions, schedules

if TYPE_CHECKING:
    from .storecore import SQLCore

#: Rows per statement. A row binds 17 parameters: 1,000 rows stay under SQLite's 32,766 and
#: PostgreSQL's 65,535 bound parameters per statement.
WRITE_BATCH = 1000

NextFire = Callable[[ScheduleSpec, datetime], "datetime | None"]


def chunks(items: Sequence[Any], size: int = WRITE_BATCH) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def keyed(keys: Collection[ScheduleKey]) -> ColumnElement[bool]:
    """The schedules of ``keys`` (``(namespace, name)``; a row value, which all three databases read)."""
    return tuple_(schedules.c.namespace, schedules.c.name).in_(sorted(keys))


def clock(store: SQLCore, conn: Connection) -> datetime:
    value = conn.execute(select(store.now_expr())).scalar_one()
    assert isinstance(value, datetime)
    return value


#: What a batch insert left each of its schedules at: ``(id, version)`` by key.
Written = dict[ScheduleKey, tuple[int, int]]


def insert_schedules(
    store: SQLCore, conn: Connection, specs: Sequence[ScheduleSpec], next_fire: NextFire, values: Callable[..., Any]
) -> Written:
    """Create ``specs``; a name that exists already is skipped by the insert and then refused
    unless it holds a schedule of the same module (another node wrote the same plan first).
    Returns the id and version of every schedule of ``specs`` (for :func:`.versioning.record`)."""
    c = schedules.c
    read_back = select(c.id, c.namespace, c.name, c.module, c.version)
    written: Written = {}
    for batch in chunks(sorted(specs, key=lambda s: s.key)):
        # Read per batch: fire times are computed from the clock at the moment they are written.
        now = clock(store, conn)
        rows = [
            values(s) | {"next_fire": next_fire(s, now), "created_at": now, "updated_at": now, "version": 1}
            for s in batch
        ]
        # The rows this insert adds get ids above every id there is now (autoincrement), so they
        # are read back by a range of the primary key. Not by their keys: on PostgreSQL, inside
        # the transaction that fills an empty table, the planner's statistics still say the table
        # is empty, and from the sixth batch on (a prepared statement's generic plan) it tested
        # every row of the namespace against the 1,000 names one by one: 0.2-1 s per batch, the
        # most of a first start's 20,000-job sync.
        before = conn.execute(select(func.coalesce(func.max(schedules.c.id), 0))).scalar_one()
        store.operations.insert_many(conn, schedules, rows, skip_existing=True)
        wanted = {s.key: s.module for s in batch}
        found = list(conn.execute(read_back.where(schedules.c.id > before)))
        # Another transaction's rows may be among them (not under the write lock, or committed
        # since): only this batch's keys count, and their module is checked all the same.
        missing = set(wanted).difference((r.namespace, r.name) for r in found)
        if missing:  # skipped by the insert: the name was taken before
            found += conn.execute(read_back.where(keyed(missing))).all()
        for sid, namespace, name, module, version in found:
            if (namespace, name) not in wanted:
                continue
            if module != wanted[(namespace, name)]:
                raise ScheduleExistsError(name)
            written[(namespace, name)] = (sid, version)
    return written


def update_schedules(
    store: SQLCore,
    conn: Connection,
    specs: Sequence[ScheduleSpec],
    next_fire: NextFire | None,
    values: Callable[..., dict[str, Any]],
    changed: Collection[ScheduleKey] = (),
) -> None:
    """Replace the definitions of ``specs``: next fire recomputed when ``next_fire`` is given,
    kept otherwise; the schedules of ``changed`` (keys; their definition changed) move to their
    next version (:mod:`.versioning` records it). One executemany per batch; rows already
    removed are skipped."""
    if not specs:
        return
    columns = list(values(specs[0]))
    # A next fire chosen while a claim holds the row waits for its release (rows.next_fire_values).
    retimed = {} if next_fire is None else next_fire_values(bindparam("b_next_fire", type_=UTCDateTime))
    stmt = (
        update(schedules)
        .where(schedules.c.namespace == bindparam("b_key_namespace"), schedules.c.name == bindparam("b_key"))
        # A new definition is a fix: a parked schedule fires again (docs/architecture.md#faults).
        .values(
            {c: bindparam(f"b_{c}") for c in columns}
            | {"updated_at": store.now_expr(), "fault": None, "fault_kind": None}
            | {"version": schedules.c.version + bindparam("b_version_step", type_=Integer)}
            | _pause_cleared_if_enabled()
            | retimed
        )
    )
    for batch in chunks(sorted(specs, key=lambda s: s.key)):
        now = clock(store, conn)
        rows = []
        for spec in batch:
            row = {f"b_{k}": v for k, v in values(spec).items()} | {
                "b_key": spec.name,
                "b_key_namespace": spec.namespace,
            }
            row["b_version_step"] = 1 if spec.key in changed else 0
            if next_fire is not None:
                row["b_next_fire"] = next_fire(spec, now)
            rows.append(row)
        conn.execute(stmt, rows)


def _pause_cleared_if_enabled() -> dict[str, Any]:
    """An enabled definition is no longer paused (``pausing.PAUSE_CLEARED``); a disabled one keeps
    its pause. By the bound value, not the column (MySQL assigns SET left to right)."""
    enabled = bindparam("b_enabled", type_=Boolean)
    return {
        "paused_note": case((enabled, None), else_=schedules.c.paused_note),
        "paused_by": case((enabled, None), else_=schedules.c.paused_by),
        "paused_at": case((enabled, None), else_=schedules.c.paused_at),
        "paused_until": case((enabled, None), else_=schedules.c.paused_until),
        "failures": case((enabled, 0), else_=schedules.c.failures),
    }


def delete_schedules(conn: Connection, keys: Sequence[ScheduleKey]) -> None:
    """Delete schedules and their history by key; those already gone are skipped."""
    for batch in chunks(sorted(keys)):
        ids = select(schedules.c.id).where(keyed(batch))
        # Explicit, so SQLite does not depend on PRAGMA foreign_keys for the cascade.
        conn.execute(delete(runs).where(runs.c.schedule_id.in_(ids.scalar_subquery())))
        conn.execute(delete(backfills).where(backfills.c.schedule_id.in_(ids.scalar_subquery())))
        # Explicit for the same reason; versioning.forget's twin (it imports this module).
        conn.execute(delete(schedule_versions).where(schedule_versions.c.schedule_id.in_(ids.scalar_subquery())))
        conn.execute(delete(schedules).where(keyed(batch)))


def mark_applied(conn: Connection, keys: Sequence[ScheduleKey]) -> None:
    """Record the schedules ``keys`` ((namespace, name)) as an apply left them: ``applied_version``
    set to their ``version`` (docs/schedules-in-git.md#drift); keys not stored are skipped."""
    for batch in chunks(sorted(keys)):
        conn.execute(update(schedules).where(keyed(batch)).values(applied_version=schedules.c.version))
