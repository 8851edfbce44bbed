"""``tickwork jobs remove|enable|disable NAME...`` (or ``--from FILE``): one name as before,
several in one transaction, all or none."""

from __future__ import annotations

import argparse
import json
import sys
from abc import abstractmethod
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from ...admin.api import Admin
from ...admin.info import ScheduleInfo
from ...errors import ConfigError, ScheduleNotFoundError, TickworkError
from ...scheduling import schedulefile
from ...scheduling.localtime import in_zone, local_time
from ...structures import BACKFILL_OVERLAP, iso_z
from ..argtypes import parse_ahead, parse_local
from ..parser import namespace_of
from .admincommand import AdminCommand, operator
from .executornotes import enabled_notes
from .jobs_view import declared_note, said


class _Several(AdminCommand):
    """One of the actions on schedules named on the command line or in a file."""

    #: The action's word (``remove``); ``{action}d`` says what was (not) done.
    action: ClassVar[str]

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("names", nargs="*", metavar="NAME", help="schedule name(s)")
        parser.add_argument(
            "--from",
            dest="from_file",
            metavar="FILE",
            help=f"{cls.action} the schedule of every entry of FILE (the file jobs add --from read; only names are "
            f"read) in one transaction; all or none",
        )

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        action = self.action
        if args.from_file is not None and args.names:
            raise ConfigError(f"jobs {action}: give either NAME... or --from FILE, not both")
        if args.from_file is None and not args.names:
            raise ConfigError(f"jobs {action}: give NAME..., or --from FILE")
        done = f"{action}d"  # removed, enabled, disabled
        if args.from_file is None and len(args.names) == 1:
            self.one(args.names[0], args.json, admin)
            return 0
        source = f" of {args.from_file}" if args.from_file is not None else ""
        names = (
            schedulefile.names(Path(args.from_file), done, namespace_of(args))
            if args.from_file is not None
            else args.names
        )
        try:
            infos = self.many(names, admin)
        except ScheduleNotFoundError as exc:
            raise TickworkError(f"{exc}; nothing was {done}") from exc
        if args.json:
            for info in infos:
                print(json.dumps(info.as_json()))
        else:
            print(f"{done} {len(infos)} schedule{'' if len(infos) == 1 else 's'}{source}")
        self.noted(infos, admin)
        return 0

    @abstractmethod
    def one(self, name: str, as_json: bool, admin: Admin) -> None:
        """Act on one schedule and say so (the words of the single-name command)."""

    @abstractmethod
    def many(self, names: list[str], admin: Admin) -> list[ScheduleInfo]:
        """Act on several schedules in one transaction, all or none."""

    def noted(self, infos: list[ScheduleInfo], admin: Admin) -> None:
        """A note on stderr about what the write means (for schedules declared in code, for
        schedules on an executor a live node lacks)."""
        return None  # disabling a declared schedule holds until its declaration changes


class JobsRemove(_Several):
    help = "delete schedules and their history (several: all or none)"
    action = "remove"

    def one(self, name: str, as_json: bool, admin: Admin) -> None:
        info = admin.remove(name)
        print(json.dumps(info.as_json()) if as_json else f"removed {info.name}")
        declared_note(info, "re-creates it")

    def many(self, names: list[str], admin: Admin) -> list[ScheduleInfo]:
        return admin.remove_many(names)

    def noted(self, infos: list[ScheduleInfo], admin: Admin) -> None:
        declared = [info for info in infos if info.module]
        if declared:
            print(
                f"tickwork: note: {len(declared)} of them {'is' if len(declared) == 1 else 'are'} declared in code "
                f"({declared[0].module}{', ...' if len({i.module for i in declared}) > 1 else ''}); the next node "
                "start re-creates them unless the declarations change",
                file=sys.stderr,
            )


class JobsEnable(_Several):
    help = "enable schedules (next fire computed from now) (several: all or none)"
    action = "enable"

    def one(self, name: str, as_json: bool, admin: Admin) -> None:
        info = admin.enable(name)
        said("enabled", info, as_json)
        enabled_notes(admin, [info])

    def many(self, names: list[str], admin: Admin) -> list[ScheduleInfo]:
        return admin.enable_many(names)

    def noted(self, infos: list[ScheduleInfo], admin: Admin) -> None:
        enabled_notes(admin, infos)


class JobsResume(JobsEnable):
    help = "end the pause of schedules (as enable: next fire computed from now) (several: all or none)"
    action = "resume"

    def one(self, name: str, as_json: bool, admin: Admin) -> None:
        info = admin.resume(name)
        said("resumed", info, as_json)
        enabled_notes(admin, [info])


class JobsDisable(_Several):
    help = "disable schedules (several: all or none)"
    action = "disable"

    def one(self, name: str, as_json: bool, admin: Admin) -> None:
        said("disabled", admin.disable(name), as_json)

    def many(self, names: list[str], admin: Admin) -> list[ScheduleInfo]:
        return admin.disable_many(names)


class JobsPause(AdminCommand):
    help = "pause a schedule with a note saying why, until resumed or until a time"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("name", help="schedule name")
        parser.add_argument("--note", required=True, help="why it is paused (shown with the schedule)")
        parser.add_argument(
            "--until",
            type=parse_ahead,
            metavar="TIME",
            help="resume by itself then: an ISO-8601 time (read in the schedule's zone without an offset), or a "
            "duration from now (30m, 2h, 1d) by the database clock",
        )

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        until = args.until
        if isinstance(until, datetime) and until.tzinfo is None:
            until = in_zone(until, admin.get(args.name).timezone, admin.store().now())
        info = admin.pause(args.name, args.note, until=until, by=operator())
        if args.json:
            print(json.dumps(info.as_json()))
        else:
            pause = info.pause
            until = (
                "until resumed"
                if pause is None or pause.until is None
                else f"until {local_time(pause.until, info.timezone)}"
            )
            print(f"paused {info.name} {until}")
        return 0


class JobsRelease(AdminCommand):
    help = "release a schedule's hand-offs no worker started (a stuck one), recorded with who released them"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("name", help="schedule name")

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        released = admin.release(args.name, by=operator())
        if args.json:
            print(json.dumps({"schedule": args.name, "released": [run.as_json() for run in released]}))
        elif released:
            for run in released:
                print(f"released run {run.id} of {run.schedule} (scheduled for {iso_z(run.scheduled_for)})")
        else:
            print(f"nothing to release: {args.name} has no hand-off waiting for a worker", file=sys.stderr)
        return 0 if released else 1


class JobsBackfill(AdminCommand):
    help = "run a schedule's fire times of a range once each (a node owning it runs them)"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("name", help="schedule name")
        parser.add_argument(
            "--from",
            dest="start",
            type=parse_local,
            required=True,
            metavar="TIME",
            help="first time (inclusive): ISO-8601, read in the schedule's zone without an offset, or an age "
            "(2h, 3d: that long ago)",
        )
        parser.add_argument(
            "--to",
            dest="end",
            type=parse_local,
            metavar="TIME",
            help="end (exclusive), as --from (default: now, by the database clock)",
        )
        parser.add_argument("--dry-run", action="store_true", help="list the fire times; queue nothing")
        parser.add_argument("--rerun", action="store_true", help="also fires the history holds a run of")
        parser.add_argument(
            "--overlap",
            choices=BACKFILL_OVERLAP,
            default="buffer_all",
            help="buffer_all (default): one at a time, oldest first; "
            "allow: side by side, up to the schedule's max_concurrent",
        )

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        zone = admin.get(args.name).timezone
        now = admin.store().now()
        start = in_zone(args.start, zone, now)
        end = now if args.end is None else in_zone(args.end, zone, now)
        report = admin.backfill(args.name, start, end, dry_run=args.dry_run, rerun=args.rerun, overlap=args.overlap)
        if args.json:
            print(json.dumps(report.as_json()))
            return 0
        if args.dry_run:
            for moment in report.times:
                print(
                    f"{local_time(moment, zone)}  {'would run' if moment in set(report.queued) else 'in the history'}"
                )
        if report.capped_to is not None:
            print(
                f"--to capped at now ({iso_z(report.capped_to)}, database clock): a backfill never runs a fire "
                "early; the fire times after it run at their time"
            )
        verb = "would queue" if args.dry_run else "queued"
        print(
            f"{verb} {len(report.queued)} of the {len(report.times)} fire times of {report.name}"
            f" ({len(report.already)} in the history already{'' if args.rerun else '; --rerun runs them again'};"
            f" overlap {report.overlap})"
        )
        return 0
