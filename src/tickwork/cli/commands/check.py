"""``tickwork check``: exit 0 when every schedule is healthy, 1 otherwise, naming the others.

Made for probes that only read an exit status and a line or two: a Kubernetes CronJob, a Nagios
check, a cron job that mails its output, a CI step.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from datetime import timedelta

from ...admin.api import Admin
from ...scheduling.durations import DurationError, seconds_in
from ..argtypes import count
from ..exitcodes import EXIT_STATE
from .admincommand import AdminCommand


def _seconds(text: str) -> float:
    try:
        value = seconds_in(text)
    except DurationError:
        raise argparse.ArgumentTypeError(f"not a duration like 90s, 5m, 1h: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


class CheckCommand(AdminCommand):
    help = "exit 0 when every schedule is healthy, 1 naming those that are not"
    description = (
        "Check the health of the schedules (see docs/observability.md): exit 0 when every one is "
        "healthy, 1 otherwise with one line per unhealthy schedule (STATE NAME REASON)."
    )

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--schedule",
            action="append",
            metavar="NAME",
            help="check only this schedule (repeatable; an unknown name is an error)",
        )
        parser.add_argument(
            "--max-failures",
            type=count(1),
            metavar="N",
            help="failing after N failed runs in a row (default: [health] max_failures, 1)",
        )
        parser.add_argument(
            "--overdue-margin",
            type=_seconds,
            metavar="DURATION",
            help="overdue when a fire passed unclaimed for longer than this, e.g. 90s, 5m "
            "(default: [health] overdue_margin, 60s)",
        )

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        policy = admin.health_policy
        if args.max_failures is not None:
            policy = replace(policy, max_failures=args.max_failures)
        if args.overdue_margin is not None:
            policy = replace(policy, overdue_margin=timedelta(seconds=args.overdue_margin))
        unhealthy = admin.check(args.schedule, policy=policy)
        for info in unhealthy:
            assert info.health is not None  # check() computes it
            if args.json:
                print(json.dumps({"name": info.name, **info.health.as_json()}))
            else:
                print(f"{info.health.state.value} {info.name}: {info.health.reason}")
        return EXIT_STATE if unhealthy else 0
