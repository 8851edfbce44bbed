"""``tickwork next EXPRESSION``: the next fire times of an expression, or its normalized form."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from ...config.files import Config
from ...plugin.command import Command
from ...plugin.manager import plugin_manager_for
from ...scheduling.localtime import local_time
from ...scheduling.triggers import check_fires, detect_kind, get_trigger, next_fire_times
from ..argtypes import count, parse_time
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

    def run(self, args: argparse.Namespace, config: Config) -> int:
        # Lookups without an explicit manager then use this one, the process's.
        manager = plugin_manager_for(config)
        if args.normalize:
            kind = args.kind or detect_kind(args.expression, manager)
            normalized = get_trigger(kind, args.expression, args.tz or "UTC", manager).normalized()
            print(json.dumps({"kind": kind, "normalized": normalized}) if args.json else normalized)
            return 0
        after = args.after or datetime.now(UTC)
        kind = args.kind or detect_kind(args.expression, manager)
        # Refused as `jobs add` refuses it: "fires 0 times" would not say why.
        check_fires(get_trigger(kind, args.expression, args.tz or "UTC", manager))
        times = next_fire_times(args.expression, kind=kind, tz=args.tz, after=after, n=args.n)
        for value in times:
            if args.json:
                # The local time as ISO-8601 with the zone's offset, beside the UTC one.
                local = {"local_time": value.astimezone(ZoneInfo(args.tz)).isoformat()} if args.tz else {}
                print(json.dumps({"fire_time": iso_z(value), **local}))
            else:
                # Without a zone, plain ISO-8601 UTC: `next` is also read by scripts.
                print(local_time(value, args.tz) if args.tz else iso_z(value))
        if len(times) < args.n:
            # stdout stays machine-readable: only fire times, one per line.
            print(f"tickwork: {args.expression!r} fires {len(times)} time(s) after {iso_z(after)}", file=sys.stderr)
        return 0
