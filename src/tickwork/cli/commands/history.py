"""``tickwork history``: runs, latest scheduled time first, with filters."""

from __future__ import annotations

import argparse

from ...admin.api import Admin
from ...structures import RunRecord, RunStatus
from ..argtypes import count, parse_since, statuses
from ..output import Listing, iso_z, one_line
from .admincommand import AdminCommand


class HistoryCommand(AdminCommand):
    help = "show runs, latest scheduled time first"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--limit", type=count(1), default=20, metavar="N", help="at most N runs (default 20)")
        parser.add_argument("--schedule", metavar="NAME", help="only runs of this schedule")
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

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        records: list[RunRecord] = admin.history(
            schedule=args.schedule,
            status=args.status,
            since=args.since,
            until=args.until,
            node=args.node,
            limit=args.limit,
        )
        Listing(
            header=("SCHEDULED FOR", "SCHEDULE", "ATTEMPT", "STATUS", "NODE", "STARTED", "FINISHED", "ERROR"),
            rows=[
                (
                    iso_z(r.scheduled_for),
                    r.schedule,
                    str(r.attempt),
                    r.status.value,
                    r.node or "-",
                    iso_z(r.started_at),
                    iso_z(r.finished_at),
                    one_line(r.error),
                )
                for r in records
            ],
            objects=[r.as_json() for r in records],
            empty="no runs match",
        ).print(as_json=args.json)
        return 0
