"""``tickwork import celery-beat MODULE:APP`` and ``tickwork import django-celery-beat URL``.

Both read every entry first, refuse the import when any entry cannot be reproduced (naming each),
validate every schedule as ``jobs add`` does (the executor must be configured), then write them
all in one transaction through :meth:`tickwork.Admin.add_many`, or print them with ``--dry-run``.
"""

from __future__ import annotations

import argparse
import json
import sys
from abc import abstractmethod
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from tickwork.admin.api import Admin
from tickwork.cli.commands.admincommand import operator
from tickwork.cli.commands.workdir import import_from_working_directory
from tickwork.cli.parser import namespace_of
from tickwork.errors import ConfigError, DatabaseMissingError, ScheduleExistsError, TickworkError
from tickwork.plugin import Command, CommandGroup
from tickwork.scheduling.triggers import check_zone, get_trigger
from tickwork.structures import ScheduleSpec

from .entries import DEFAULT_EXECUTOR, Imported, Refusals
from .requirements import require

if TYPE_CHECKING:
    from tickwork.config import Config


class _Import(Command):
    """One source of Celery beat schedules."""

    #: How the source is named in messages (``celery-beat proj.celery:app``).
    what: ClassVar[str]

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="print the schedules as JSON lines (a jobs add --from file); write nothing",
        )
        parser.add_argument(
            "--replace", action="store_true", help="replace run-time schedules of the same names (default: refuse)"
        )
        parser.add_argument(
            "--executor",
            default=DEFAULT_EXECUTOR,
            metavar="NAME",
            help=f"executor of the schedules; it must be configured (default: {DEFAULT_EXECUTOR})",
        )
        parser.add_argument("--prefix", default="", metavar="TEXT", help="put TEXT before every schedule name")
        parser.add_argument(
            "--skip", action="append", default=[], metavar="NAME", help="leave out the entry NAME (repeatable)"
        )

    @abstractmethod
    def source(self, args: argparse.Namespace) -> str:
        """The source as messages name it."""

    @abstractmethod
    def read(self, args: argparse.Namespace, admin: Admin, now: datetime, refusals: Refusals) -> list[Imported]:
        """Every entry of the source (refused ones go to ``refusals``)."""

    def run(self, args: argparse.Namespace, config: Config) -> int:
        require()
        import_from_working_directory()  # the Celery app's module, like celery -A
        source = self.source(args)
        with Admin(config, namespace=namespace_of(args)) as admin:
            # First, as jobs add checks it first: nothing is read or created for nothing.
            unconfigured = _unconfigured(admin, args.executor, dry_run=args.dry_run)
            entries, specs = self._checked(args, admin, source, unconfigured is None)
            for entry in entries:
                for note in entry.notes:
                    print(f"tickwork: note: {entry.name}: {note}", file=sys.stderr)
            if args.dry_run:
                for entry in entries:
                    print(json.dumps(entry.fields(args.executor, args.prefix)))
                if unconfigured is not None:
                    print(f"tickwork: note: the import itself would be refused: {unconfigured}", file=sys.stderr)
                print(f"tickwork: dry run: nothing was written ({len(specs)} schedules)", file=sys.stderr)
                return 0
            try:
                infos = admin.add_many(specs, replace=args.replace, by=operator())
            except ScheduleExistsError as exc:
                raise TickworkError(
                    f"{exc}; nothing was imported (--replace replaces run-time schedules, --prefix names them apart)"
                ) from exc
        if args.json:
            for info in infos:
                print(json.dumps(info.as_json()))
        else:
            print(f"imported {len(infos)} schedule{'' if len(infos) == 1 else 's'} from {source}")
        return 0

    def _checked(
        self, args: argparse.Namespace, admin: Admin, source: str, executor_configured: bool
    ) -> tuple[list[Imported], list[ScheduleSpec]]:
        """The entries to write and their specs, each checked as ``jobs add`` checks a schedule
        (only its trigger when the executor is not configured, for a dry run).

        :raises tickwork.errors.ConfigError: naming every entry that cannot be imported
        """
        refusals = Refusals(source, skip=args.skip)
        entries = self.read(args, admin, _now(admin), refusals)
        unknown = sorted(set(args.skip) - {e.name for e in entries} - refusals.skipped)
        if unknown:
            raise TickworkError(f"{source}: --skip names no entry: {', '.join(unknown)}; nothing was imported")
        entries = [e for e in entries if e.name not in args.skip]
        specs: list[ScheduleSpec] = []
        for entry in entries:
            fields = entry.fields(args.executor, args.prefix)
            try:
                specs.append(admin.spec(**fields) if executor_configured else _trigger_checked(admin, fields))
            except (TickworkError, ValueError, TypeError) as exc:
                refusals.add(entry.name, str(exc))
        refusals.check()
        if not specs:
            raise TickworkError(f"{source}: no entries to import")
        return entries, specs


def _unconfigured(admin: Admin, executor: str, *, dry_run: bool) -> str | None:
    """Why ``executor`` cannot run the schedules, for a dry run (``None``: it can). The import
    refuses an executor that is not configured, with the error ``jobs add`` gives; a dry run
    previews the schedules anyway, so that they can be read before the executor is set up.

    :raises tickwork.errors.ConfigError: if it is not configured (and not ``dry_run``)
    """
    try:
        admin.specs.executor(executor)
    except ConfigError as exc:
        if not dry_run:
            raise
        return str(exc)
    return None


def _trigger_checked(admin: Admin, fields: dict[str, Any]) -> ScheduleSpec:
    """The spec of ``fields`` with its name, zone and trigger checked, but not its target (for a
    dry run whose executor is not configured)."""
    spec = ScheduleSpec(
        name=fields["name"],
        trigger_kind=fields["kind"],
        expression=fields["expression"],
        target=fields["target"],
        timezone=fields["tz"],
        executor=fields["executor"],
        arguments=fields["args"],
        enabled=fields["enabled"],
    )
    check_zone(spec.timezone)
    get_trigger(spec.trigger_kind, spec.expression, spec.timezone, admin.manager)
    return spec


def _now(admin: Admin) -> datetime:
    """The tickwork database's clock (it decides what is due). A store that does not exist yet is
    not created to read it (the import creates it when it writes, a dry run never): this host's
    clock stands in."""
    try:
        return admin.store().now()
    except DatabaseMissingError:
        return datetime.now(UTC)


class CeleryBeatImport(_Import):
    help = "import app.conf.beat_schedule of a Celery app"
    description = "Import the beat_schedule of a Celery app as schedules run by the celery executor (docs/celery.md)."

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("app", metavar="MODULE:APP", help="the Celery app, as celery -A takes it (proj.celery:app)")
        super().add_arguments(parser)

    def source(self, args: argparse.Namespace) -> str:
        return str(args.app)

    def read(self, args: argparse.Namespace, admin: Admin, now: datetime, refusals: Refusals) -> list[Imported]:
        from .celeryapp import load_app, read_app

        return read_app(load_app(args.app), refusals)


class DjangoCeleryBeatImport(_Import):
    help = "import the periodic tasks of django-celery-beat's tables (SQL only, no Django)"
    description = (
        "Import django-celery-beat's PeriodicTask rows, read from its tables with SQL, as schedules run by "
        "the celery executor (docs/celery.md)."
    )

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "url",
            metavar="URL",
            help="the Django database (sqlite:///db.sqlite3, postgresql://user@host/db, mysql://...)",
        )
        super().add_arguments(parser)

    def source(self, args: argparse.Namespace) -> str:
        from tickwork.sql import dburl

        return f"django-celery-beat at {dburl.masked(args.url)}"

    def read(self, args: argparse.Namespace, admin: Admin, now: datetime, refusals: Refusals) -> list[Imported]:
        from . import djangobeat
        from .djangotables import parse_url, read_rows

        def next_fire(kind: str, expression: str, tz: str, after: datetime) -> datetime | None:
            return get_trigger(kind, expression, tz, admin.manager).next_after(after)

        return djangobeat.read(read_rows(parse_url(args.url)), now, next_fire, refusals)


class ImportCommand(CommandGroup):
    help = "import schedules from Celery beat (celery-beat, django-celery-beat)"
    description = "Import schedules from another scheduler, in one transaction."
    actions: ClassVar[dict[str, type[Command]]] = {
        "celery-beat": CeleryBeatImport,
        "django-celery-beat": DjangoCeleryBeatImport,
    }
