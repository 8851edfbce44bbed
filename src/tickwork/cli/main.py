"""The ``tickwork`` command line (reference: docs/cli.md). Schedules, history and nodes go through
the public admin API (:mod:`tickwork.admin`), so the CLI can do nothing a program cannot."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..admin.api import Admin
from ..admin.dbschema import describe_store, schema_status, upgrade_with_report
from ..admin.info import ScheduleInfo
from ..config.files import load
from ..errors import (
    ConfigError,
    ConfigProblems,
    DeclarationError,
    ExecutorError,
    ScheduleExistsError,
    ScheduleNotFoundError,
    TickworkError,
    TriggerError,
)
from ..node import logformat
from ..node.node import Node
from ..plugin.command import Command
from ..plugin.manager import default_manager, plugin_manager_for
from ..scheduling import schedulefile
from ..scheduling.triggers import detect_kind, get_trigger, next_fire_times
from ..structures import RunRecord
from .output import Listing, iso_z, one_line
from .parser import LOG_LEVEL_ENV, LOG_LEVELS, build_parser

log = logging.getLogger("tickwork.cli")

#: Exit status for invalid input (bad expression, config, arguments).
EXIT_USAGE = 2
#: Exit status for a state the command cannot act on (unknown name, old schema, missing store).
EXIT_STATE = 1


def _setup_logging(level: str | None, default: str) -> None:
    env = os.environ.get(LOG_LEVEL_ENV, "").strip().upper()
    if level is None and env:
        if env not in LOG_LEVELS:
            raise ConfigError(f"${LOG_LEVEL_ENV}: {env!r} is not one of {', '.join(LOG_LEVELS)}")
        level = env
    logformat.configure(level or default)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 state error, 2 invalid input)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command_at = _command_index(argv)
    try:
        # Plugins may add commands (`tickwork web`); a broken plugin is one error line, not a
        # traceback. The process's manager is built from the configuration first, so that a
        # plugin its `[plugins] block` lists is never imported.
        parser = build_parser(plugin_manager_for(load(_config_option(argv))).commands)
    except ConfigError as exc:
        if argv[command_at : command_at + 1] and argv[command_at] in BUILTIN_COMMANDS:
            parser = build_parser()  # the command itself reports the configuration's error
        else:
            return _error(exc, EXIT_USAGE)
    word = argv[command_at] if command_at < len(argv) else None
    if word is not None and not word.startswith("-") and word not in BUILTIN_COMMANDS:
        blocked = _blocked_command(word, argv)
        if blocked is not None:
            return _error(ConfigError(blocked), EXIT_USAGE)
    args = parser.parse_args(argv)
    plugin_command: type[Command] | None = getattr(args, "plugin_command", None)
    try:
        default_level = "INFO" if args.command == "run" else "WARNING"
        if plugin_command is not None:
            default_level = plugin_command.default_log_level
        _setup_logging(args.log_level, default_level)
        code = _dispatch(args)
        sys.stdout.flush()  # inside the try: a reader that went away surfaces here
        return code
    except (ConfigError, TriggerError, DeclarationError, ExecutorError) as exc:
        return _error(exc, EXIT_USAGE)
    except TickworkError as exc:  # a state the command cannot act on: unknown name, old schema, ...
        return _error(exc, EXIT_STATE)
    except BrokenPipeError:
        # `tickwork jobs list | head -1`: the reader is gone, which is not an error. Point stdout
        # at /dev/null so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130


def _blocked_command(word: str, argv: Sequence[str]) -> str | None:
    """Why ``word`` is no command here when a plugin that ``[plugins] block`` lists provides it
    (found without importing any blocked plugin: the command is the plugin's entry-point name)."""
    try:
        config = load(_config_option(argv))
    except ConfigError:
        return None
    if word not in config.blocked_plugins:
        return None
    return (
        f"command {word!r} comes from plugin {word!r}, which [plugins] block lists in "
        f"{config.source or 'the configuration'}"
    )


def _config_option(argv: Sequence[str]) -> str | None:
    """The ``-c/--config`` value among ``argv`` (global options may follow the command too)."""
    found: str | None = None
    for i, word in enumerate(argv):
        if word in ("-c", "--config") and i + 1 < len(argv):
            found = argv[i + 1]
        elif word.startswith("--config="):
            found = word.partition("=")[2]
        elif word == "--":
            break
    return found


def _command_index(argv: Sequence[str]) -> int:
    """The position of the command word, past any global options before it."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in ("-c", "--config", "--log-level"):
            i += 2
        elif word == "--json" or word.startswith(("--config=", "--log-level=")):
            i += 1
        else:
            break
    return i


#: The commands of tickwork itself (plugins may add more).
BUILTIN_COMMANDS = frozenset({"run", "next", "jobs", "history", "db", "nodes"})


def _error(exc: Exception, code: int) -> int:
    # One line per problem, whatever the underlying message held.
    lines = [*exc.problems, exc.summary] if isinstance(exc, ConfigProblems) else [str(exc)]
    for line in lines:
        text = " ".join(line.split("\n"))
        print(f"tickwork: error: {text}", file=sys.stderr)
    return code


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "next":
        return _next(args)
    config = load(args.config)
    # Like gunicorn/celery: job modules and targets are importable from the working directory,
    # which the `tickwork` console script (unlike `python -m`) does not put on sys.path.
    if args.command in ("run", "jobs") and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    if args.command == "run":
        if config.logging.format != "text":
            logformat.configure(logging.getLogger().level, config.logging.format)  # same level, JSON
        Node(config).run(args.duration, tune_process=True)  # the process is the node's own
        return 0
    if args.command == "db":
        return _db(args, config)
    plugin_command: type[Command] | None = getattr(args, "plugin_command", None)
    if plugin_command is not None:
        # The parser is built before the config is read, so `[plugins] block` is honoured here.
        owner = default_manager().commands.owner(args.command)
        if owner in config.blocked_plugins:
            raise ConfigError(
                f"command {args.command!r} comes from plugin {owner!r}, which [plugins] block lists in "
                f"{config.source or 'the configuration'}"
            )
        return plugin_command().run(args, config)
    with Admin(config) as admin:
        if args.command == "jobs":
            return _jobs(args, admin)
        if args.command == "history":
            return _history(args, admin)
        if args.command == "nodes":
            return _nodes(args, admin)
    raise AssertionError(args.command)


# -- next -----------------------------------------------------------------------------------------


def _next(args: argparse.Namespace) -> int:
    # The configuration only decides which plugins are loaded (`[plugins] block`); lookups without
    # an explicit manager then use this one, the process's.
    manager = plugin_manager_for(load(args.config))
    if args.normalize:
        kind = args.kind or detect_kind(args.expression, manager)
        normalized = get_trigger(kind, args.expression, args.tz or "UTC", manager).normalized()
        print(json.dumps({"kind": kind, "normalized": normalized}) if args.json else normalized)
        return 0
    after = args.after or datetime.now(UTC)
    times = next_fire_times(args.expression, kind=args.kind, tz=args.tz, after=after, n=args.n)
    for value in times:
        print(json.dumps({"fire_time": iso_z(value)}) if args.json else iso_z(value))
    if len(times) < args.n:
        # stdout stays machine-readable: only fire times, one per line.
        print(f"tickwork: {args.expression!r} fires {len(times)} time(s) after {iso_z(after)}", file=sys.stderr)
    return 0


# -- jobs -----------------------------------------------------------------------------------------


def _state(info: ScheduleInfo) -> str:
    if info.running_on:
        return f"running on {info.running_on}"
    if info.fault:
        return f"parked: {info.fault}"
    return info.state.value if info.enabled else "disabled"


def _last(info: ScheduleInfo) -> str:
    if info.last_run is None:
        return "-"
    return f"{info.last_run.status.value} {iso_z(info.last_run.scheduled_for)}"


def _schedules_listing(infos: Sequence[ScheduleInfo], empty: str) -> Listing:
    return Listing(
        header=("NAME", "KIND", "EXPRESSION", "TZ", "NEXT FIRE", "STATE", "LAST RUN", "EXECUTOR", "TARGET"),
        rows=[
            (i.name, i.kind, i.expression, i.timezone, iso_z(i.next_fire), _state(i), _last(i), i.executor, i.target)
            for i in infos
        ],
        objects=[i.as_json() for i in infos],
        empty=empty,
    )


def _show(info: ScheduleInfo, as_json: bool) -> None:
    if as_json:
        print(json.dumps(info.as_json()))
        return
    last = info.last_run
    fields: list[tuple[str, Any]] = [
        ("name", info.name),
        ("trigger", f"{info.kind} {info.expression!r} in {info.timezone}"),
        ("enabled", "yes" if info.enabled else "no"),
        ("next fire", iso_z(info.next_fire)),
        ("state", _state(info)),
        ("executor", info.executor),
        ("target", info.target),
        ("arguments", json.dumps(info.arguments)),
        ("timeout", f"{info.timeout:g}s"),
        ("retries", f"{info.retries} (backoff {info.retry_backoff:g}s, doubled)"),
        ("misfire", info.misfire.value if info.misfire else "default (scheduler.misfire)"),
        ("declared in", info.module or "- (run-time schedule)"),
        ("last run", "-" if last is None else f"{last.status.value}, scheduled {iso_z(last.scheduled_for)}"),
    ]
    if last is not None and last.error:
        fields.append(("last error", one_line(last.error, 200)))
    fields += [("created", iso_z(info.created_at)), ("updated", iso_z(info.updated_at))]
    width = max(len(k) for k, _ in fields)
    for key, value in fields:
        print(f"{key + ':':<{width + 1}} {value}")


def _arguments(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--args: not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ConfigError("--args: must be a JSON object")
    return value


def _said(verb: str, info: ScheduleInfo, as_json: bool, extra: str = "") -> None:
    if as_json:
        print(json.dumps(info.as_json()))
    else:
        print(f"{verb} {info.name}; next fire {iso_z(info.next_fire)}{extra}")


def _declared_note(info: ScheduleInfo, what: str) -> None:
    if info.module:
        print(
            f"tickwork: note: {info.name} is declared in {info.module}; the next node start {what} "
            f"unless the declaration changes",
            file=sys.stderr,
        )


def _several(args: argparse.Namespace, admin: Admin) -> None:
    """``jobs remove|enable|disable`` with NAME... or ``--from FILE``: one name as before, several
    in one transaction, all or none."""
    action = args.action
    if args.from_file is not None and args.names:
        raise ConfigError(f"jobs {action}: give either NAME... or --from FILE, not both")
    if args.from_file is None and not args.names:
        raise ConfigError(f"jobs {action}: give NAME..., or --from FILE")
    done = f"{action}d"  # removed, enabled, disabled
    if args.from_file is None and len(args.names) == 1:
        _one(action, args.names[0], args.json, admin)
        return
    source = f" of {args.from_file}" if args.from_file is not None else ""
    names = schedulefile.names(Path(args.from_file), done) if args.from_file is not None else args.names
    many = {"remove": admin.remove_many, "enable": admin.enable_many, "disable": admin.disable_many}[action]
    try:
        infos = many(names)
    except ScheduleNotFoundError as exc:
        raise TickworkError(f"{exc}; nothing was {done}") from exc
    if args.json:
        for info in infos:
            print(json.dumps(info.as_json()))
    else:
        print(f"{done} {len(infos)} schedule{'' if len(infos) == 1 else 's'}{source}")
    declared = [info for info in infos if info.module]
    if declared and action == "remove":
        print(
            f"tickwork: note: {len(declared)} of them {'is' if len(declared) == 1 else 'are'} declared in code "
            f"({declared[0].module}{', ...' if len({i.module for i in declared}) > 1 else ''}); the next node "
            "start re-creates them unless the declarations change",
            file=sys.stderr,
        )


def _one(action: str, name: str, as_json: bool, admin: Admin) -> None:
    if action == "remove":
        info = admin.remove(name)
        print(json.dumps(info.as_json()) if as_json else f"removed {info.name}")
        _declared_note(info, "re-creates it")
    else:
        info = admin.enable(name) if action == "enable" else admin.disable(name)
        _said(f"{action}d", info, as_json)


def _add_from(args: argparse.Namespace, admin: Admin) -> None:
    if any(v is not None for v in (args.name, args.expression, args.target)):
        raise ConfigError("jobs add: give either NAME EXPRESSION TARGET or --from FILE, not both")
    path = Path(args.from_file)
    entries, specs = schedulefile.load(path, admin.spec)
    try:
        infos = admin.add_many(specs, replace=args.replace)
    except ScheduleExistsError as exc:
        line = next(e.line for e in entries if e.fields.get("name") == exc.name)
        raise TickworkError(
            f"{path}:{line}: a schedule named {exc.name!r} already exists; nothing was added "
            "(--replace replaces run-time schedules)"
        ) from exc
    if args.json:
        for info in infos:
            print(json.dumps(info.as_json()))
    else:
        print(f"added {len(infos)} schedule{'' if len(infos) == 1 else 's'} from {path}")


def _jobs(args: argparse.Namespace, admin: Admin) -> int:
    action = args.action
    if action == "list":
        infos = admin.list(
            state=args.state, enabled=args.enabled, search=args.search, limit=args.limit, offset=args.offset
        )
        filtered = any(v is not None for v in (args.state, args.enabled, args.search, args.limit)) or args.offset
        empty = "no schedules match" if filtered else "no schedules"
        _schedules_listing(infos, empty).print(as_json=args.json)
    elif action == "show":
        _show(admin.get(args.name), args.json)
    elif action == "add" and args.from_file is not None:
        _add_from(args, admin)
    elif action == "add":
        if None in (args.name, args.expression, args.target):
            raise ConfigError("jobs add: give NAME EXPRESSION TARGET, or --from FILE")
        info = admin.add(
            args.name,
            args.expression,
            args.target,
            kind=args.kind,
            tz=args.tz,
            executor=args.executor,
            args=_arguments(args.args),
            timeout=args.timeout,
            retries=args.retries,
            retry_backoff=args.retry_backoff,
            misfire=args.misfire,
            enabled=not args.disabled,
            replace=args.replace,
        )
        _said("added", info, args.json)
    elif action == "update":
        fields = {
            key: value
            for key, value in {
                "expression": args.expression,
                "target": args.target,
                "kind": args.kind,
                "tz": args.tz,
                "executor": args.executor,
                "args": _arguments(args.args),
                "timeout": args.timeout,
                "retries": args.retries,
                "retry_backoff": args.retry_backoff,
                "misfire": args.misfire,
                "enabled": args.enabled,
            }.items()
            if value is not None
        }
        if not fields:
            raise ConfigError("jobs update: nothing to change; give at least one option (tickwork jobs update --help)")
        info = admin.update(args.name, **fields)
        _said("updated", info, args.json)
        _declared_note(info, "puts the declared definition back")
    elif action in ("remove", "enable", "disable"):
        _several(args, admin)
    elif action == "trigger":
        info = admin.trigger(args.name)
        if args.json:
            print(json.dumps(info.as_json()))
        else:
            print(f"triggered {info.name}; due {iso_z(info.next_fire)}")
    return 0


# -- history / nodes ------------------------------------------------------------------------------


def _history(args: argparse.Namespace, admin: Admin) -> int:
    records: list[RunRecord] = admin.history(
        schedule=args.schedule,
        status=args.status,
        since=args.since,
        until=args.until,
        node=args.node,
        limit=args.limit,
    )
    Listing(
        header=("SCHEDULED FOR", "SCHEDULE", "ATTEMPT", "STATUS", "NODE", "STARTED", "FINISHED", "ERROR"),
        rows=[
            (
                iso_z(r.scheduled_for),
                r.schedule,
                str(r.attempt),
                r.status.value,
                r.node or "-",
                iso_z(r.started_at),
                iso_z(r.finished_at),
                one_line(r.error),
            )
            for r in records
        ],
        objects=[r.as_json() for r in records],
        empty="no runs match",
    ).print(as_json=args.json)
    return 0


def _age(value: float) -> str:
    if value < 120:
        return f"{value:.1f}s"
    if value < 7200:
        return f"{value / 60:.0f}m"
    return f"{value / 3600:.1f}h"


def _nodes(args: argparse.Namespace, admin: Admin) -> int:
    nodes = admin.nodes()
    Listing(
        header=("NODE", "STATUS", "HEARTBEAT AGE", "STARTED", "LAST HEARTBEAT"),
        rows=[
            (n.id, "live" if n.live else "dead", _age(n.heartbeat_age), iso_z(n.started_at), iso_z(n.heartbeat_at))
            for n in nodes
        ],
        objects=[n.as_json() for n in nodes],
        empty="no nodes (none is running, or none has started on this store yet)",
    ).print(as_json=args.json)
    return 0


# -- db -------------------------------------------------------------------------------------------


def _db(args: argparse.Namespace, config: Any) -> int:
    if args.action == "current":
        status = schema_status(config)
        if args.json:
            print(json.dumps(status.as_json()))
        else:
            print(status.sentence())
        return 0 if status.latest else EXIT_STATE
    if args.sql:
        sql = upgrade_with_report(config, sql_only=True)
        sys.stdout.write(sql)
        return 0
    report = upgrade_with_report(config, sql_only=False)
    print(json.dumps({"store": describe_store(config), "result": report}) if args.json else report)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
