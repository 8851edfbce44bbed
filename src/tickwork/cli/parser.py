"""The ``tickwork`` argument parser: commands, options and their help texts.

The global options (``-c/--config``, ``--log-level``, ``--json``) are accepted before or after the
subcommand: the top-level parser holds their defaults, and every subcommand parser repeats them
with ``SUPPRESS`` defaults, so that a value given after the subcommand wins and an absent one does
not overwrite a value given before it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from .. import __version__
from ..errors import ConfigError
from ..plugin.command import Command
from ..structures import MisfirePolicy, RunStatus, ScheduleState, parse_iso

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_LEVEL_ENV = "TICKWORK_LOG_LEVEL"

EPILOG = f"""\
environment:
  TICKWORK_CONFIG     config file used when -c/--config is not given (else ./tickwork.toml)
  {LOG_LEVEL_ENV:<19} log level used when --log-level is not given

exit status:
  0  success
  1  a state the command cannot act on (unknown schedule, outdated schema, missing database, ...)
  2  invalid usage or configuration (bad option, expression, config key, job module, ...)

Global options may come before or after the command: `tickwork -c prod.toml jobs list` and
`tickwork jobs list -c prod.toml` are the same. Docs: docs/cli.md.
"""

_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_time(text: str) -> datetime:
    """An ISO-8601 date-time (UTC without an offset)."""
    try:
        return parse_iso(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {text!r}") from None


def parse_since(text: str) -> datetime | timedelta:
    """``--since``/``--until``: an ISO-8601 time, or an age such as ``90s``, ``15m``, ``1h``, ``2d``
    (returned as a timedelta: that long before the database's clock)."""
    match = _RELATIVE.match(text)
    if match:
        return timedelta(seconds=float(match[1]) * _UNIT_SECONDS[match[2]])
    try:
        return parse_time(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time or an age like 30m, 1h, 2d: {text!r}") from None


def count(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def non_negative_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be >= 0 seconds, got {text}")
    return value


def statuses(text: str) -> list[str]:
    """``--status failed,timed_out`` (repeatable)."""
    values = [v.strip() for v in text.split(",") if v.strip()]
    choices = [s.value for s in RunStatus]
    for value in values:
        if value not in choices:
            raise argparse.ArgumentTypeError(f"invalid status {value!r} (choose from {', '.join(choices)})")
    return values


def _globals(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("global options (before or after the command)")
    group.add_argument(
        "-c",
        "--config",
        metavar="FILE",
        default=default(None),
        help="TOML config file (default: $TICKWORK_CONFIG, else ./tickwork.toml, else built-in defaults)",
    )
    group.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        metavar="LEVEL",
        default=default(None),
        help=f"{', '.join(LOG_LEVELS)} (default: ${LOG_LEVEL_ENV}, else INFO for run and WARNING otherwise)",
    )
    group.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="machine-readable output: one JSON object per line",
    )


def _command(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, text: str) -> argparse.ArgumentParser:
    parser = sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
    _globals(parser, suppress=True)
    return parser


def _schedule_options(parser: argparse.ArgumentParser, *, update: bool) -> None:
    """The options ``jobs add`` and ``jobs update`` share; ``update`` has no defaults (unchanged)."""

    def default(value: object) -> object:
        return None if update else value

    keep = " (default: unchanged)" if update else ""
    parser.add_argument(
        "--kind", help="trigger kind: cron, calendar, interval, once (default: recognised from the expression)"
    )
    parser.add_argument(
        "--tz",
        default=default("UTC"),
        metavar="ZONE",
        help=f"IANA time zone of the expression{keep or ' (default UTC)'}",
    )
    parser.add_argument(
        "--executor",
        metavar="NAME",
        help=f"executor that runs the target{keep or ' (default: scheduler.default_executor)'}",
    )
    parser.add_argument(
        "--args", default=default("{}"), metavar="JSON", help=f"JSON object of keyword arguments for the target{keep}"
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=default(300.0),
        metavar="SECONDS",
        help=f"soft timeout of a run{keep or ' (default 300)'}",
    )
    parser.add_argument(
        "--misfire",
        choices=[p.value for p in MisfirePolicy],
        help=f"what to do with missed fire times{keep or ' (default: scheduler.misfire)'}",
    )
    parser.add_argument(
        "--retries",
        type=count(0),
        default=default(0),
        metavar="N",
        help=f"retries of a failed run{keep or ' (default 0)'}",
    )
    parser.add_argument(
        "--retry-backoff",
        type=non_negative_seconds,
        default=default(10.0),
        metavar="SECONDS",
        help=f"wait before the first retry, doubled after each{keep or ' (default 10)'}",
    )


def build_parser(commands: Iterable[tuple[str, type[Command]]] = ()) -> argparse.ArgumentParser:
    """The ``tickwork`` parser; ``commands`` are the plugins' subcommands (name, class)."""
    parser = argparse.ArgumentParser(
        prog="tickwork",
        description="Periodic jobs, fired exactly once per due time across a cluster of nodes.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tickwork {__version__}")
    _globals(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = _command(sub, "run", "run a scheduler node until Ctrl-C or SIGTERM")
    run.add_argument("--for", dest="duration", type=seconds, metavar="SECONDS", help="stop cleanly after SECONDS")

    # `next` is a function of its arguments: it reads no database, and of the configuration only
    # `[plugins] block` (which plugins are loaded).
    nxt = _command(sub, "next", "print the next fire times of an expression (UTC, one per line)")
    nxt.add_argument("expression", help='a trigger expression, e.g. "*/15 * * * *", "Mon..Fri 09:00", "90s"')
    nxt.add_argument("--kind", help="trigger kind: cron, calendar, interval, once (default: recognised)")
    nxt.add_argument("--tz", default=None, metavar="ZONE", help="IANA time zone of the expression (default UTC)")
    nxt.add_argument(
        "--after", type=parse_time, metavar="TIME", help="ISO-8601 start, UTC without an offset (default: now)"
    )
    nxt.add_argument("-n", type=count(0), default=1, metavar="N", help="how many fire times (default 1)")
    nxt.add_argument("--normalize", action="store_true", help="print the normalized expression instead")

    jobs = sub.add_parser("jobs", help="list, show, add, update and remove schedules", description="Manage schedules.")
    jsub = jobs.add_subparsers(dest="action", required=True, metavar="ACTION")
    jl = _command(jsub, "list", "list schedules, next to fire first")
    jl.add_argument("--state", choices=[s.value for s in ScheduleState], help="only idle or running ones")
    enabled = jl.add_mutually_exclusive_group()
    enabled.add_argument("--enabled", dest="enabled", action="store_const", const=True, help="only enabled ones")
    enabled.add_argument("--disabled", dest="enabled", action="store_const", const=False, help="only disabled ones")
    jl.add_argument("--search", metavar="TEXT", help="only those whose name or target contains TEXT (any case)")
    jl.add_argument("--limit", type=count(1), metavar="N", help="at most N schedules")
    jl.add_argument("--offset", type=count(0), default=0, metavar="N", help="skip the first N (default 0)")

    js = _command(jsub, "show", "show one schedule in full, with its last run")
    js.add_argument("name", help="schedule name")

    ja = _command(jsub, "add", "add a run-time schedule, or many from a file (--from)")
    ja.add_argument("name", nargs="?", help="unique schedule name")
    ja.add_argument("expression", nargs="?", help='trigger expression, e.g. "0 2 * * *"')
    ja.add_argument(
        "target", nargs="?", help="what the executor runs: package.module:function for local, a URL for http"
    )
    ja.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE",
        help="add every schedule of FILE in one transaction (JSON lines, or [[schedule]] tables in a .toml "
        "file; fields as the arguments of this command); all or none are added",
    )
    _schedule_options(ja, update=False)
    ja.add_argument("--disabled", action="store_true", help="create it disabled")
    ja.add_argument("--replace", action="store_true", help="replace a run-time schedule of the same name")

    ju = _command(jsub, "update", "change some fields of a schedule (the next fire is recomputed for a new trigger)")
    ju.add_argument("name", help="schedule name")
    ju.add_argument("--expression", metavar="EXPR", help="new trigger expression")
    ju.add_argument("--target", help="new target")
    _schedule_options(ju, update=True)
    state = ju.add_mutually_exclusive_group()
    state.add_argument("--enable", dest="enabled", action="store_const", const=True, help="enable it")
    state.add_argument("--disable", dest="enabled", action="store_const", const=False, help="disable it")

    for action, text, does in (
        ("remove", "delete schedules and their history", "remove"),
        ("enable", "enable schedules (next fire computed from now)", "enable"),
        ("disable", "disable schedules", "disable"),
    ):
        p = _command(jsub, action, f"{text} (several: all or none)")
        p.add_argument("names", nargs="*", metavar="NAME", help="schedule name(s)")
        p.add_argument(
            "--from",
            dest="from_file",
            metavar="FILE",
            help=f"{does} the schedule of every entry of FILE (the file jobs add --from read; only names are "
            f"read) in one transaction; all or none",
        )
    jt = _command(jsub, "trigger", "make a schedule due now (a run now)")
    jt.add_argument("name", help="schedule name")

    hist = _command(sub, "history", "show runs, latest scheduled time first")
    hist.add_argument("--limit", type=count(1), default=20, metavar="N", help="at most N runs (default 20)")
    hist.add_argument("--schedule", metavar="NAME", help="only runs of this schedule")
    hist.add_argument(
        "--status",
        type=statuses,
        action="extend",
        metavar="STATUS",
        help=f"only runs with this status; repeat or separate with commas ({', '.join(s.value for s in RunStatus)})",
    )
    hist.add_argument(
        "--since",
        type=parse_since,
        metavar="WHEN",
        help="only runs scheduled at or after WHEN: ISO time or age (1h, 2d)",
    )
    hist.add_argument("--until", type=parse_since, metavar="WHEN", help="only runs scheduled before WHEN")
    hist.add_argument("--node", metavar="NODE_ID", help="only runs started by this node")

    _command(sub, "nodes", "list nodes, live or dead by the age of their last heartbeat")

    db = sub.add_parser("db", help="database schema: current revision, upgrade", description="Database schema.")
    dsub = db.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = _command(dsub, "upgrade", "apply pending migrations and say what was done")
    up.add_argument("--sql", action="store_true", help="print the SQL instead of running it (for a DBA)")
    _command(dsub, "current", "print the schema revision of the database and whether it is the latest")

    for name, command in commands:
        if name in sub.choices:
            raise ConfigError(f"command {name!r} of plugin command class {command.__qualname__} is a built-in command")
        extra = _command(sub, name, command.help or f"the {name} command")
        command.add_arguments(extra)
        extra.set_defaults(plugin_command=command)
    return parser
