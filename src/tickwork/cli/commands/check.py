"""``tickwork check``: exit 0 when no schedule needs attention, 1 otherwise, naming them.

Made for probes that only read an exit status and a line or two: a Kubernetes CronJob, a Nagios
check, a cron job that mails its output, a CI step. A schedule paused or disabled on purpose is
listed and counted apart, and fails the check only with ``--strict``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from datetime import timedelta

from ...admin.api import Admin
from ...admin.healthreads import CheckReport
from ...admin.info import ScheduleInfo, pause_json
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
    help = "exit 0 when no schedule needs attention, 1 naming those that do"
    description = (
        "Check the health of the schedules (see docs/observability.md): exit 0 when none needs "
        "attention, 1 otherwise. One line per schedule that is not healthy (STATE NAME: REASON), "
        "then the counts: healthy, unhealthy, paused, disabled. A schedule paused or disabled on "
        "purpose does not fail the check unless --strict."
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
        parser.add_argument(
            "--strict",
            action="store_true",
            help="schedules paused or disabled on purpose fail the check too (by default they are "
            "listed and counted, and do not)",
        )

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        policy = admin.health_policy
        if args.max_failures is not None:
            policy = replace(policy, max_failures=args.max_failures)
        if args.overdue_margin is not None:
            policy = replace(policy, overdue_margin=timedelta(seconds=args.overdue_margin))
        report = admin.probe(args.schedule, policy=policy, strict=args.strict)
        groups = (("unhealthy", report.unhealthy), ("paused", report.paused), ("disabled", report.disabled))
        for group, infos in groups:
            for info in infos:
                _print(info, group, report, args.json)
        summary = report.summary()
        if args.json:
            print(json.dumps({"summary": summary}))
        else:
            print(_summary_line(report))
        return 0 if report.ok else EXIT_STATE


def _print(info: ScheduleInfo, group: str, report: CheckReport, as_json: bool) -> None:
    health = info.health
    assert health is not None  # probe() computes it
    fails = group == "unhealthy" or report.strict
    if as_json:
        pause = None if info.pause is None else pause_json(info.pause)
        print(json.dumps({"name": info.name, "group": group, "fails_check": fails, **health.as_json(), "pause": pause}))
    else:
        # "disabled" for a schedule disabled without a pause: its health state is "paused" too.
        label = "disabled" if group == "disabled" else health.state.value
        print(f"{label} {info.name}: {health.reason}")


def _summary_line(report: CheckReport) -> str:
    s = report.summary()
    line = (
        f"{s['schedules']} schedule{'s' if s['schedules'] != 1 else ''}: {s['healthy']} healthy, "
        f"{s['unhealthy']} unhealthy, {s['paused']} paused, {s['disabled']} disabled"
    )
    if (s["paused"] or s["disabled"]) and not report.strict:
        line += " (paused and disabled ones do not fail the check; --strict makes them)"
    return line
