"""``tickwork db upgrade|current``: the database schema."""

from __future__ import annotations

import argparse
import json
import sys
from typing import ClassVar

from ...admin.dbschema import describe_store, schema_status, upgrade_with_report
from ...config.files import Config
from ...plugin.command import Command, CommandGroup
from ..exitcodes import EXIT_STATE


class DbUpgrade(Command):
    help = "apply pending migrations and say what was done"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--sql", action="store_true", help="print the SQL instead of running it (for a DBA)")

    def run(self, args: argparse.Namespace, config: Config) -> int:
        if args.sql:
            sys.stdout.write(upgrade_with_report(config, sql_only=True))
            return 0
        report = upgrade_with_report(config, sql_only=False)
        print(json.dumps({"store": describe_store(config), "result": report}) if args.json else report)
        return 0


class DbCurrent(Command):
    help = "print the schema revision of the database and whether it is the latest"

    def run(self, args: argparse.Namespace, config: Config) -> int:
        status = schema_status(config)
        print(json.dumps(status.as_json()) if args.json else status.sentence())
        return 0 if status.latest else EXIT_STATE


class DbCommand(CommandGroup):
    help = "database schema: current revision, upgrade"
    description = "Database schema."
    actions: ClassVar[dict[str, type[Command]]] = {"upgrade": DbUpgrade, "current": DbCurrent}
