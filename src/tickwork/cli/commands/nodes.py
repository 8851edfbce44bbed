"""``tickwork nodes``: the nodes, live or dead by the age of their last heartbeat, and the
executors each runs."""

from __future__ import annotations

import argparse

from ...admin.api import Admin
from ..output import Column, Listing, short_time
from .admincommand import AdminCommand


def _age(value: float) -> str:
    if value < 120:
        return f"{value:.1f}s"
    if value < 7200:
        return f"{value / 60:.0f}m"
    return f"{value / 3600:.1f}h"


class NodesCommand(AdminCommand):
    help = "list nodes, live or dead by the age of their last heartbeat"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--wide", action="store_true", help="every column in full, however wide the terminal")

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        nodes = admin.nodes()
        Listing(
            columns=(
                Column("NODE", shrink=12),
                Column("STATUS"),
                Column("HEARTBEAT AGE"),
                Column("STARTED", keep=20),
                Column("LAST HEARTBEAT", keep=10),
                # What `jobs add` checks a schedule's executor against; "-": not published (older).
                Column("EXECUTORS", keep=30, shrink=10),
            ),
            wide=args.wide,
            rows=[
                (
                    n.id,
                    "live" if n.live else "dead",
                    _age(n.heartbeat_age),
                    short_time(n.started_at),
                    short_time(n.heartbeat_at),
                    "-" if n.executors is None else ",".join(n.executors) or "none",
                )
                for n in nodes
            ],
            objects=[n.as_json() for n in nodes],
            empty="no nodes (none is running, or none has started on this store yet)",
        ).print(as_json=args.json)
        return 0
