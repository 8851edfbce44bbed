"""Schedule versions in the SQL store (``tickwork_schedule_versions``): written by the schedule
writes (:mod:`.schedulewrites`, :mod:`.bulk`) in their own transaction, so no path that changes a
definition can leave its version out, and read by :meth:`ScheduleVersions.versions`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Insert, String, Text, bindparam, delete, insert, select

from ..errors import ScheduleNotFoundError
from ..scheduling.versions import FirstVersions, Template, changes, definition
from ..structures import DEFAULT_NAMESPACE, ScheduleKey, ScheduleSpec, ScheduleVersion
from . import bulk
from .jsontext import Encoded
from .retry import transient_retry
from .schema import UTCDateTime, named, schedule_versions, schedules
from .storecore import SQLCore


@dataclass(frozen=True)
class Shaped:
    """A new schedule's first version as its shape's :class:`Template` and its target: the
    database joins the two when the schedule's row is known (:func:`record`), the text is built
    here otherwise."""

    template: Template
    target: str

    def texts(self) -> tuple[Encoded, Encoded]:
        changed, new = self.template.texts(self.target)
        return Encoded(changed), Encoded(new)


#: Each changed definition by schedule key: its changes and the whole definition after them
#: (JSON, or a new schedule's as its JSON text), or a new schedule's :class:`Shaped` version.
Diffs = dict[ScheduleKey, "Shaped | tuple[dict[str, dict[str, Any]] | Encoded, dict[str, Any] | Encoded]"]


def diffs(written: Sequence[tuple[ScheduleSpec, ScheduleSpec | None]]) -> Diffs:
    """The definitions of ``written`` (each with the one it replaces, ``None``: a new schedule)
    that changed. A new schedule's first version is always a change, and its JSON text is built
    once per shape of definition (:class:`FirstVersions`: a first sync of 20,000 declared jobs
    built 20,000 definitions and encoded 40,000 JSON objects); a changed one's definitions are
    computed once each."""
    out: Diffs = {}
    first = FirstVersions()
    for spec, before in written:
        if before is None:
            template = first.template(spec)
            if template is not None:
                out[spec.key] = Shaped(template, spec.target)
                continue
            changed_text, new_text = first.texts(spec)
            out[spec.key] = (Encoded(changed_text), Encoded(new_text))
            continue
        new = definition(spec)
        changed = changes(definition(before), new)
        if changed:
            out[spec.key] = (changed, new)
    return out


def record(store: SQLCore, conn: Connection, wanted: Diffs, by: str | None, known: bulk.Written | None = None) -> None:
    """Insert the version rows of the definitions just written in ``conn``'s transaction (the
    changed ones, :func:`diffs`): each schedule's number is read back from its row, which the
    write set (1 for a new schedule, one more for a changed one), unless ``known`` holds it (the
    schedules :func:`.bulk.insert_schedules` just created, read back by it already).

    The first versions of known new schedules that share a shape are written by one
    ``INSERT ... SELECT`` per batch, which joins the shape's text around each row's target in
    the database: a first sync of 20,000 declared jobs sent 15 MB of nearly identical JSON
    (740 bytes a definition), which PyMySQL escaped character by character in Python."""
    if not wanted:
        return
    known = known or {}
    # The clock read once, not bound per row: an executemany evaluates a bound clock at every row.
    now = bulk.clock(store, conn)
    shaped: dict[Template, list[int]] = {}
    rows = []
    for key in sorted(wanted):
        if key not in known:
            continue
        value = wanted[key]
        if isinstance(value, Shaped):
            shaped.setdefault(value.template, []).append(known[key][0])
        else:
            rows.append(_row(key, *known[key], wanted, now, by))
    joined = store._statement("versions.joined", lambda: _joined(store))
    for template, ids in shaped.items():
        for batch in bulk.chunks(ids):
            conn.execute(joined, {"ids": list(batch), "now": now, "by": by, **asdict(template)})
    for batch in bulk.chunks(rows):
        store.operations.insert_many(conn, schedule_versions, batch)
    for batch in bulk.chunks(sorted(key for key in wanted if key not in known)):
        found = conn.execute(
            select(schedules.c.id, schedules.c.namespace, schedules.c.name, schedules.c.version).where(
                bulk.keyed(batch)
            )
        )
        rows = [_row((namespace, name), sid, number, wanted, now, by) for sid, namespace, name, number in found]
        store.operations.insert_many(conn, schedule_versions, rows)


def _joined(store: SQLCore) -> Insert:
    """The first versions of the schedules ``:ids``, their shape's text (``:changes_head`` ...)
    joined around each one's target, at each one's version (1: just created)."""
    s = schedules.c

    def around(part: str) -> ColumnElement[Any]:
        text = bindparam(f"{part}_head", type_=Text) + s.target + bindparam(f"{part}_tail", type_=Text)
        return store.operations.text_as_json(text)

    source = select(
        s.id,
        s.version,
        bindparam("now", type_=UTCDateTime),
        bindparam("by", type_=String),
        around("changes"),
        around("definition"),
    ).where(s.id.in_(bindparam("ids", expanding=True)))
    columns = ["schedule_id", "version", "created_at", "created_by", "changes", "definition"]
    return insert(schedule_versions).from_select(columns, source)


def _row(key: ScheduleKey, sid: int, number: int, wanted: Diffs, now: datetime, by: str | None) -> dict[str, Any]:
    value = wanted[key]
    changed, new = value.texts() if isinstance(value, Shaped) else value
    return {
        "schedule_id": sid,
        "version": number,
        "created_at": now,
        "created_by": by,
        "changes": changed,
        "definition": new,
    }


def forget(conn: Connection, schedule_ids: Any) -> None:
    """Delete the versions of the schedules ``schedule_ids`` (a list or a subquery) before the
    schedules themselves: explicit, so SQLite does not depend on PRAGMA foreign_keys."""
    conn.execute(delete(schedule_versions).where(schedule_versions.c.schedule_id.in_(schedule_ids)))


class ScheduleVersions(SQLCore):
    """Reading a schedule's versions."""

    @transient_retry
    def versions(self, name: str, *, namespace: str = DEFAULT_NAMESPACE) -> list[ScheduleVersion]:
        with self._tx() as conn:
            schedule_id = conn.scalar(select(schedules.c.id).where(*named(name, namespace)))
            if schedule_id is None:
                raise ScheduleNotFoundError(name)
            rows = conn.execute(
                select(schedule_versions)
                .where(schedule_versions.c.schedule_id == schedule_id)
                .order_by(schedule_versions.c.version)
            ).all()
        return [
            ScheduleVersion(
                schedule=name,
                version=int(r.version),
                at=r.created_at,
                by=r.created_by,
                changes=dict(r.changes),
                definition=dict(r.definition),
            )
            for r in rows
        ]
