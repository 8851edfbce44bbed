"""``tickwork jobs list|show|trigger``, and how schedules are printed."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any

from ...admin.api import Admin
from ...admin.info import ScheduleInfo
from ...plugin.tracebacks import for_people
from ...scheduling.localtime import local_time
from ...scheduling.options import shown
from ...structures import ALL_NAMESPACES, FaultKind, ScheduleState
from ..argtypes import count
from ..output import Column, Listing, age, duration, iso_z, one_line, short_time
from .admincommand import AdminCommand

#: ``jobs list``'s columns: what goes first on a narrow terminal, and how far each may be cut.
#: Others' columns slot in here with a ``keep`` of their own. HEALTH and LAST RUN are what an
#: operator looks for (is anything failing?): they stay at 80 columns, and the expression (which
#: ``jobs show`` gives in full) is cut first to make room.
LIST_COLUMNS = (
    Column("NAME", shrink=12),
    Column("KIND", keep=20),
    Column("EXPRESSION", shrink=4, cut_first=True),
    Column("TZ", keep=40, shrink=10),
    Column("NEXT FIRE"),
    Column("STATE", shrink=10),
    Column("HEALTH"),
    Column("LAST RUN"),
    Column("EXECUTOR", keep=10),  # an extra: most schedules run on the default one
    Column("TARGET", keep=30, shrink=16),
)


def _state(info: ScheduleInfo) -> str:
    if info.running_on:
        return f"running on {info.running_on}"
    if info.fault:
        return f"parked: {info.fault}"
    if info.pause is not None:
        return "paused" + ("" if info.pause.until is None else f" until {local_time(info.pause.until, info.timezone)}")
    if info.finished:
        return f"finished ({info.run_count} runs)"
    return info.state.value if info.enabled else "disabled"


def _health(info: ScheduleInfo) -> str:
    return "-" if info.health is None else info.health.state.value


def fix_for(info: ScheduleInfo) -> str:
    """What to do about a parked schedule, in the words of the commands to type."""
    enable = f"tickwork jobs enable {info.name}"
    if info.fault_kind is FaultKind.EXECUTOR_NOT_CONFIGURED:
        return (
            f"add an [executor.{info.executor}] table to the tickwork.toml of the nodes that run it, "
            f"restart those nodes, then: {enable}"
        )
    return f"fix the cause above (the node's log says more), then: {enable}"


def _last(info: ScheduleInfo, now: datetime | None = None) -> str:
    """The last run's status and time (``now`` given: its age, the short form of a table)."""
    if info.last_run is None:
        return "-"
    when = info.last_run.scheduled_for
    return f"{info.last_run.status.value} {short_time(when) if now is None else age(when, now)}"


def next_fire(info: ScheduleInfo) -> str:
    """The next fire in the schedule's own zone with UTC beside it (UTC alone for UTC ones)."""
    return local_time(info.next_fire, info.timezone)


def said(verb: str, info: ScheduleInfo, as_json: bool, extra: str = "") -> None:
    """What a write did to one schedule: ``added NAME; next fire ...`` (or its JSON)."""
    if as_json:
        print(json.dumps(info.as_json()))
    else:
        print(f"{verb} {info.name}; next fire {next_fire(info)}{extra}")


def declared_note(info: ScheduleInfo, what: str) -> None:
    """A note on stderr when a write touched a schedule declared in code (``what`` the next node
    start does to it)."""
    if info.module:
        print(
            f"tickwork: note: {info.name} is declared in {info.module}; the next node start {what} "
            f"unless the declaration changes",
            file=sys.stderr,
        )


class JobsList(AdminCommand):
    help = "list schedules, next to fire first"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--state", choices=[s.value for s in ScheduleState], help="only idle or running ones")
        enabled = parser.add_mutually_exclusive_group()
        enabled.add_argument("--enabled", dest="enabled", action="store_const", const=True, help="only enabled ones")
        enabled.add_argument("--disabled", dest="enabled", action="store_const", const=False, help="only disabled ones")
        parser.add_argument("--search", metavar="TEXT", help="only those whose name or target contains TEXT (any case)")
        parser.add_argument("--limit", type=count(1), metavar="N", help="at most N schedules")
        parser.add_argument("--offset", type=count(0), default=0, metavar="N", help="skip the first N (default 0)")
        parser.add_argument("--wide", action="store_true", help="every column in full, however wide the terminal")

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        infos = admin.list(
            state=args.state, enabled=args.enabled, search=args.search, limit=args.limit, offset=args.offset
        )
        # A terminal's table says when in short forms: the zone is its own column, a run an age.
        now = admin.store().now() if infos else None
        # Across every namespace a name alone is ambiguous: namespace/name (docs/teams.md).
        every = admin.namespace == ALL_NAMESPACES
        names = [f"{i.namespace}/{i.name}" if every else i.name for i in infos]
        terminal = [
            [
                name,
                i.kind,
                i.expression,
                i.timezone,
                local_time(i.next_fire, i.timezone, named=False),
                _state(i),
                _health(i),
                _last(i, now),
                i.executor,
                i.target,
            ]
            for i, name in zip(infos, names, strict=True)
        ]
        filtered = any(v is not None for v in (args.state, args.enabled, args.search, args.limit)) or args.offset
        Listing(
            columns=LIST_COLUMNS,
            wide=args.wide,
            rows=[
                (
                    name,
                    i.kind,
                    i.expression,
                    i.timezone,
                    next_fire(i),
                    _state(i),
                    _health(i),
                    _last(i),
                    i.executor,
                    i.target,
                )
                for i, name in zip(infos, names, strict=True)
            ],
            objects=[i.as_json() for i in infos],
            empty="no schedules match" if filtered else "no schedules",
            terminal_rows=terminal,
        ).print(as_json=args.json)
        return 0


class JobsShow(AdminCommand):
    help = "show one schedule in full, with its last run"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("name", help="schedule name")
        parser.add_argument(
            "--traceback", action="store_true", help="print the last run's error with its traceback in full"
        )

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        info = admin.get(args.name)
        if args.traceback:
            return _print_traceback(info, as_json=args.json)
        if args.json:
            print(json.dumps(info.as_json()))
            return 0
        last = info.last_run
        fields: list[tuple[str, Any]] = [
            ("name", info.name),
            ("trigger", f"{info.kind} {info.expression!r} in {info.timezone}"),
            ("enabled", "yes" if info.enabled else "no"),
            ("next fire", next_fire(info)),
            ("state", "parked" if info.fault and not info.running_on else _state(info)),
            ("health", "-" if info.health is None else f"{info.health.state.value} ({info.health.reason})"),
            ("executor", info.executor),
            ("target", info.target),
            ("arguments", json.dumps(info.arguments)),
            ("timeout", f"{info.timeout:g}s"),
            ("retries", f"{info.retries} (backoff {info.retry_backoff:g}s, doubled)"),
            ("misfire", info.misfire.value if info.misfire else "default (scheduler.misfire)"),
            # The rarer options it sets, each as its option shows it (docs/triggers.md#schedule-options).
            *((o.label, o.line()) for o in shown(info)),
            ("declared in", info.module or "- (run-time schedule)"),
            ("version", f"{info.version} (tickwork jobs versions {info.name})" if info.version else "-"),
            (
                "last run",
                "-"
                if last is None
                else f"{last.status.value}, scheduled {local_time(last.scheduled_for, info.timezone)}, "
                f"took {duration(last.started_at, last.finished_at)}",
            ),
        ]
        if info.pause is not None:
            fields.insert(4, ("paused", _paused(info)))
        if info.fault:
            # Parked: the schedule fires no more until someone acts; say what to do.
            fields[5:5] = [("why parked", info.fault), ("to fix", fix_for(info))]
        if last is not None and last.error:
            fields.append(("last error", one_line(last.error, 200)))
            if "\nTraceback" in last.error:
                fields.append(("traceback", f"tickwork jobs show {info.name} --traceback"))
        fields += [("created", short_time(info.created_at)), ("updated", short_time(info.updated_at))]
        width = max(len(k) for k, _ in fields)
        for key, value in fields:
            print(f"{key + ':':<{width + 1}} {value}")
        return 0


def _print_traceback(info: ScheduleInfo, *, as_json: bool) -> int:
    """``jobs show NAME --traceback``: the last run's error in full, without tickwork's frames."""
    last = info.last_run
    if last is None or not last.error:
        print(f"tickwork: {info.name} has no failed last run", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps(last.as_json()))
    else:
        print(f"run {last.id} of {info.name}, scheduled {iso_z(last.scheduled_for)}: {last.status.value}")
        print(for_people(last.error))
    return 0


def _paused(info: ScheduleInfo) -> str:
    pause = info.pause
    assert pause is not None
    by = f" by {pause.by}" if pause.by else ""
    until = "until resumed" if pause.until is None else f"until {local_time(pause.until, info.timezone)}"
    return f"{one_line(pause.note, 200)!r}{by} at {local_time(pause.at, info.timezone)}, {until}"


class JobsTrigger(AdminCommand):
    help = "make a schedule due now (a run now)"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("name", help="schedule name")

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        info = admin.trigger(args.name)
        if args.json:
            print(json.dumps(info.as_json()))
        else:
            print(f"triggered {info.name}; due {next_fire(info)}")
        return 0
