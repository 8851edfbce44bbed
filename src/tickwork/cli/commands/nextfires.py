"""``tickwork next EXPRESSION``: the next fire times of an expression, or its normalized form."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from ...config.calendars import calendar, use_calendars
from ...config.files import Config
from ...errors import ConfigError
from ...plugin.command import Command
from ...plugin.manager import plugin_manager_for
from ...scheduling.firetimes import Exclusion, FireTimes, HolidayRule, compiled, excluding, jitter_offset
from ...scheduling.localtime import local_time
from ...scheduling.options import non_negative_seconds
from ...scheduling.triggers import check_fires, detect_kind, get_trigger
from ...structures import OnHoliday
from ..argtypes import count, parse_time, usage
from ..output import iso_z


class NextCommand(Command):
    """A function of its arguments: it reads no database, and of the configuration only
    ``[plugins] block`` (which plugins are loaded)."""

    help = "print the next fire times of an expression, one per line (with --tz: local time, UTC beside it)"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("expression", help='a trigger expression, e.g. "*/15 * * * *", "Mon..Fri 09:00", "90s"')
        parser.add_argument("--kind", help="trigger kind: cron, calendar, interval, once (default: recognised)")
        parser.add_argument("--tz", default=None, metavar="ZONE", help="IANA time zone of the expression (default UTC)")
        parser.add_argument(
            "--after", type=parse_time, metavar="TIME", help="ISO-8601 start, UTC without an offset (default: now)"
        )
        parser.add_argument("-n", type=count(0), default=1, metavar="N", help="how many fire times (default 1)")
        parser.add_argument("--normalize", action="store_true", help="print the normalized expression instead")
        parser.add_argument(
            "--jitter",
            type=usage(non_negative_seconds),
            metavar="SECONDS",
            help="a schedule's jitter: its times moved by the offset of --name (a schedule's option)",
        )
        parser.add_argument("--name", help="the schedule name the --jitter offset comes from")
        parser.add_argument(
            "--also", action="append", default=[], metavar="EXPRESSION", help="a further expression (repeatable)"
        )
        parser.add_argument(
            "--exclude", action="append", default=[], metavar="EXPRESSION", help="times not to fire (repeatable)"
        )
        parser.add_argument("--start-at", type=parse_time, metavar="TIME", help="no fire before this time")
        parser.add_argument("--end-at", type=parse_time, metavar="TIME", help="no fire after this time")
        parser.add_argument(
            "--holidays",
            metavar="CALENDAR",
            help="a business-day calendar: DE, DE-BE, US-NY (the holidays package) or a [calendars.NAME] table",
        )
        parser.add_argument(
            "--on-holiday",
            choices=OnHoliday.choices(),
            default=OnHoliday.SKIP.value,
            help="a fire on a day off of --holidays: skip it or move it to the next or previous business day "
            "(default skip)",
        )

    def run(self, args: argparse.Namespace, config: Config) -> int:
        # Lookups without an explicit manager then use this one, the process's.
        manager = plugin_manager_for(config)
        if args.normalize:
            kind = args.kind or detect_kind(args.expression, manager)
            normalized = get_trigger(kind, args.expression, args.tz or "UTC", manager).normalized()
            print(json.dumps({"kind": kind, "normalized": normalized}) if args.json else normalized)
            return 0
        after = args.after or datetime.now(UTC)
        if args.jitter and not args.name:
            raise ConfigError("next: --jitter needs --name: the offset is taken from the schedule's name")
        kind = args.kind or detect_kind(args.expression, manager)
        zone = args.tz or "UTC"
        use_calendars(config.calendars)
        holidays = None
        if args.holidays is not None:
            rule = calendar(args.holidays, "--holidays")
            holidays = HolidayRule(rule, OnHoliday(args.on_holiday), ZoneInfo(zone))
        trigger = get_trigger(kind, args.expression, zone, manager)
        # Refused as `jobs add` refuses it: "fires 0 times" would not say why.
        check_fires(trigger)
        offset = jitter_offset(args.name, timedelta(seconds=args.jitter)) if args.jitter else timedelta(0)
        if offset:
            print(f"tickwork: jitter offset of {args.name!r}: +{offset.total_seconds():.6f}s", file=sys.stderr)
        fires = FireTimes(
            trigger,
            offset=offset,
            start_at=args.start_at,
            end_at=args.end_at,
            also=[compiled(e, zone, manager) for e in args.also],
            exclusions=[Exclusion(excluding(e, zone, manager), zone) for e in args.exclude],
            holidays=holidays,
        )
        times = list(itertools.islice(fires.fires_after(after), args.n))
        for value, moved in times:
            if args.json:
                # The local time as ISO-8601 with the zone's offset, beside the UTC one.
                local = {"local_time": value.astimezone(ZoneInfo(args.tz)).isoformat()} if args.tz else {}
                why = {"moved": moved} if moved else {}
                print(json.dumps({"fire_time": iso_z(value), **local, **why}))
            else:
                # Without a zone, plain ISO-8601 UTC: `next` is also read by scripts.
                print(local_time(value, args.tz) if args.tz else iso_z(value))
                if moved:
                    # stdout stays one fire time per line: why it moved goes beside, on stderr.
                    print(f"tickwork: {iso_z(value)}: {moved}", file=sys.stderr)
        if len(times) < args.n:
            # stdout stays machine-readable: only fire times, one per line.
            print(f"tickwork: {args.expression!r} fires {len(times)} time(s) after {iso_z(after)}", file=sys.stderr)
        return 0
