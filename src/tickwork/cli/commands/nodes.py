"""``tickwork nodes``: the nodes, live or dead by the age of their last heartbeat."""

from __future__ import annotations

import argparse

from ...admin.api import Admin
from ..output import Listing, iso_z
from .admincommand import AdminCommand


def _age(value: float) -> str:
    if value < 120:
        return f"{value:.1f}s"
    if value < 7200:
        return f"{value / 60:.0f}m"
    return f"{value / 3600:.1f}h"


class NodesCommand(AdminCommand):
    help = "list nodes, live or dead by the age of their last heartbeat"

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        nodes = admin.nodes()
        Listing(
            header=("NODE", "STATUS", "HEARTBEAT AGE", "STARTED", "LAST HEARTBEAT"),
            rows=[
                (n.id, "live" if n.live else "dead", _age(n.heartbeat_age), iso_z(n.started_at), iso_z(n.heartbeat_at))
                for n in nodes
            ],
            objects=[n.as_json() for n in nodes],
            empty="no nodes (none is running, or none has started on this store yet)",
        ).print(as_json=args.json)
        return 0
