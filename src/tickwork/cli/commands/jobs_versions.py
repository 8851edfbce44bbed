"""``tickwork jobs versions NAME`` and ``tickwork jobs revert NAME --to N``: the versions of a
schedule's definition, each with what it changed, and going back to one (docs/cli.md#versions)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ...admin.api import Admin
from ...structures import ScheduleVersion
from ..output import short_time
from .admincommand import AdminCommand, operator
from .executornotes import add_node_check_flag
from .jobs_view import said


def change_lines(version: ScheduleVersion) -> list[str]:
    """What a version changed, one field a line: ``retries: 0 -> 3`` (values as JSON, so text
    and numbers read apart), or ``retries = 3`` for a field a new schedule got."""
    created = all(change["old"] is None for change in version.changes.values())
    if created:
        return [f"{field} = {value_text(change['new'])}" for field, change in version.changes.items()]
    return [
        f"{field}: {value_text(change['old'])} -> {value_text(change['new'])}"
        for field, change in version.changes.items()
    ]


def value_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


class JobsVersions(AdminCommand):
    help = "list the versions of a schedule's definition, each with the fields it changed"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("name", help="schedule name")

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        versions = admin.versions(args.name)
        if not versions:
            print(
                f"tickwork: {args.name} has no recorded versions (stored before versions were, and not changed since)",
                file=sys.stderr,
            )
            return 0
        if args.json:
            for version in versions:
                print(json.dumps(version.as_json()))
            return 0
        current = versions[-1].version
        for version in versions:
            mark = "  (current)" if version.version == current else ""
            print(f"version {version.version}  {short_time(version.at)}  by {version.by or '-'}{mark}")
            for line in change_lines(version):
                print(f"  {line}")
        return 0


class JobsRevert(AdminCommand):
    help = "give a schedule the definition of one of its versions again, as a new version"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("name", help="schedule name")
        parser.add_argument(
            "--to", type=int, required=True, metavar="N", help="the version to restore (tickwork jobs versions NAME)"
        )
        add_node_check_flag(parser)

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        before = admin.get(args.name).version
        info = admin.revert(args.name, args.to, by=operator(), check_nodes=args.check_nodes)
        if info.version == before:
            said("unchanged", info, args.json)
            if not args.json:
                print(f"tickwork: {args.name} already has the definition of version {args.to}", file=sys.stderr)
            return 0
        said("reverted", info, args.json, f" (version {args.to}'s definition, now version {info.version})")
        return 0
