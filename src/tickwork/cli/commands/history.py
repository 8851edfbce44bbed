"""``tickwork history``: runs, latest scheduled time first, with filters."""

from __future__ import annotations

import argparse
import json

from ...admin.api import Admin
from ...errors import TickworkError
from ...plugin.tracebacks import for_people
from ...structures import RunRecord, RunStatus
from ..argtypes import count, parse_since, statuses
from ..output import Column, Listing, duration, iso_z, one_line, short_time
from .admincommand import AdminCommand

#: ``history``'s columns: the run id (for ``--show``) and what ended how stay; the node, the
#: attempt and the start go first on a narrow terminal, and the error is cut before them.
COLUMNS = (
    Column("RUN"),
    Column("SCHEDULED FOR"),
    Column("SCHEDULE", shrink=14),
    Column("ATTEMPT", keep=20),
    Column("STATUS"),
    Column("NODE", keep=30, shrink=10),
    Column("STARTED", keep=10),
    Column("DURATION", keep=60),
    Column("ERROR", keep=70, shrink=12),
)
#: The queue worker that ran a hand-off, after NODE: only when a run listed has one (a cluster
#: that hands nothing off never sees an empty column), and dropped before NODE when narrow.
WORKER = Column("WORKER", keep=25, shrink=12)
_AFTER_NODE = [c.header for c in COLUMNS].index("NODE") + 1


def _cells(r: RunRecord, with_worker: bool) -> tuple[str, ...]:
    cells = (
        str(r.id),
        short_time(r.scheduled_for),
        r.schedule,
        str(r.attempt),
        r.status.value,
        r.node or "-",
        short_time(r.started_at),
        duration(r.started_at, r.finished_at),
        one_line(r.error),
    )
    if not with_worker:
        return cells
    return (*cells[:_AFTER_NODE], r.worker or "-", *cells[_AFTER_NODE:])


class HistoryCommand(AdminCommand):
    help = "show runs, latest scheduled time first"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--limit", type=count(1), default=20, metavar="N", help="at most N runs (default 20)")
        parser.add_argument(
            "--schedule",
            metavar="NAME",
            action="append",
            help="only runs of this schedule; repeat for several (--schedule a --schedule b)",
        )
        parser.add_argument(
            "--status",
            type=statuses,
            action="extend",
            metavar="STATUS",
            help="only runs with this status; repeat or separate with commas "
            f"({', '.join(s.value for s in RunStatus)})",
        )
        parser.add_argument(
            "--since",
            type=parse_since,
            metavar="WHEN",
            help="only runs scheduled at or after WHEN: ISO time or age (1h, 2d)",
        )
        parser.add_argument("--until", type=parse_since, metavar="WHEN", help="only runs scheduled before WHEN")
        parser.add_argument("--node", metavar="NODE_ID", help="only runs started by this node")
        parser.add_argument("--wide", action="store_true", help="every column in full, however wide the terminal")
        parser.add_argument(
            "--show",
            type=count(1),
            metavar="RUN_ID",
            help="print one run in full, its error with the traceback (the RUN column gives the id)",
        )

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        if args.show is not None:
            return self._show(args.show, admin, as_json=args.json)
        records: list[RunRecord] = admin.history(
            schedule=args.schedule,
            status=args.status,
            since=args.since,
            until=args.until,
            node=args.node,
            limit=args.limit,
        )
        with_worker = any(r.worker for r in records)
        columns = (*COLUMNS[:_AFTER_NODE], WORKER, *COLUMNS[_AFTER_NODE:]) if with_worker else COLUMNS
        Listing(
            columns=columns,
            wide=args.wide,
            rows=[_cells(r, with_worker) for r in records],
            objects=[r.as_json() for r in records],
            empty="no runs match",
        ).print(as_json=args.json)
        return 0

    @staticmethod
    def _show(run_id: int, admin: Admin, *, as_json: bool) -> int:
        record = admin.run(run_id)
        if record is None:
            raise TickworkError(f"no run with id {run_id} in the history (tickwork history lists the ids)")
        if as_json:
            print(json.dumps(record.as_json()))
            return 0
        fields = [
            ("run", str(record.id)),
            ("schedule", record.schedule),
            ("scheduled for", iso_z(record.scheduled_for)),
            ("attempt", str(record.attempt)),
            ("status", record.status.value),
            ("node", record.node or "-"),
            *([("worker", record.worker)] if record.worker else []),
            ("started", iso_z(record.started_at)),
            ("finished", iso_z(record.finished_at)),
            ("took", duration(record.started_at, record.finished_at)),
        ]
        width = max(len(k) for k, _ in fields)
        for key, value in fields:
            print(f"{key + ':':<{width + 1}} {value}")
        if record.error:
            print()
            print(for_people(record.error))
        return 0
