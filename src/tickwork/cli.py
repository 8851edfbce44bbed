"""The ``tickwork`` command line."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from alembic.util import CommandError

from . import schedules as admin
from .abc import Store
from .config import Config, load, plugin_manager_for
from .errors import (
    ConfigError,
    DeclarationError,
    ExecutorError,
    TickworkError,
    TriggerError,
)
from .node import Node, build_executors, build_store
from .structures import MisfirePolicy, Schedule, ScheduleSpec
from .triggers import detect_kind, get_trigger, next_fire_times

log = logging.getLogger("tickwork.cli")

#: Exit status for invalid input (bad expression, config, arguments).
EXIT_USAGE = 2


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def iso_z(value: datetime | None) -> str:
    """ISO-8601 in UTC with a trailing ``Z``; ``-`` for no value."""
    if value is None:
        return "-"
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    """``--after``: an ISO-8601 date-time; without an offset it is UTC."""
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _count(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _non_negative_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, got {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    logs = argparse.ArgumentParser(add_help=False)
    logs.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default=None,
        help="DEBUG, INFO (default for run), WARNING (default), ERROR",
    )
    common = argparse.ArgumentParser(add_help=False, parents=[logs])
    common.add_argument(
        "--config", "-c", metavar="FILE", help="TOML config (default: $TICKWORK_CONFIG, ./tickwork.toml)"
    )

    parser = argparse.ArgumentParser(prog="tickwork", description="Periodic jobs, exactly once per due time.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", parents=[common], help="run a scheduler node")
    run.add_argument("--for", dest="duration", type=_seconds, metavar="SECONDS", help="stop cleanly after SECONDS")

    # `next` is a function of its arguments; a configuration only decides which plugins are
    # loaded (`[plugins] block`), and no database is read.
    nxt = sub.add_parser("next", parents=[common], help="print the next fire times of an expression")
    nxt.add_argument("expression")
    nxt.add_argument("--kind", help="trigger kind (cron, calendar, interval, once); recognised when omitted")
    nxt.add_argument("--tz", default=None, help="IANA time zone the expression is evaluated in (default UTC)")
    nxt.add_argument("--after", type=parse_time, help="ISO-8601 start (default: now)")
    nxt.add_argument("-n", type=_count(0), default=1, help="how many fire times (default 1)")
    nxt.add_argument("--normalize", action="store_true", help="print the normalized expression instead")

    jobs = sub.add_parser("jobs", help="manage schedules")
    jsub = jobs.add_subparsers(dest="action", required=True, metavar="ACTION")
    jl = jsub.add_parser("list", parents=[common], help="list schedules")
    jl.add_argument("--json", action="store_true")
    ja = jsub.add_parser("add", parents=[common], help="add a run-time schedule")
    ja.add_argument("name")
    ja.add_argument("expression")
    ja.add_argument("target", help="executor target, e.g. package.module:function or a URL")
    ja.add_argument("--kind")
    ja.add_argument("--tz", default="UTC")
    ja.add_argument("--executor", default=None, help="executor plugin (default: scheduler.default_executor)")
    ja.add_argument("--args", default="{}", help="JSON object of arguments")
    ja.add_argument("--timeout", type=_seconds, default=300.0, help="soft timeout in seconds (default 300)")
    ja.add_argument("--misfire", choices=[p.value for p in MisfirePolicy])
    ja.add_argument("--retries", type=_count(0), default=0, help="retries of a failed run (default 0)")
    ja.add_argument(
        "--retry-backoff",
        type=_non_negative_seconds,
        default=10.0,
        help="seconds before the first retry, doubled after (default 10)",
    )
    ja.add_argument("--disabled", action="store_true", help="create it disabled")
    for action, text in (
        ("remove", "delete a schedule and its history"),
        ("enable", "enable a schedule (next fire computed from now)"),
        ("disable", "disable a schedule"),
        ("trigger", "make a schedule due now (a run now)"),
    ):
        p = jsub.add_parser(action, parents=[common], help=text)
        p.add_argument("name")

    hist = sub.add_parser("history", parents=[common], help="show recent runs")
    hist.add_argument("--json", action="store_true", help="one JSON object per line")
    hist.add_argument("--limit", type=_count(1), default=20, help="most recent runs shown (default 20)")
    hist.add_argument("--schedule", help="only this schedule")

    db = sub.add_parser("db", help="database schema")
    dsub = db.add_subparsers(dest="action", required=True, metavar="ACTION")
    dsub.add_parser("upgrade", parents=[common], help="apply pending migrations")

    sub.add_parser("nodes", parents=[common], help="list nodes and their heartbeats")

    # The harness's options live in tickwork.bench.cli, imported only when it runs.
    bench = sub.add_parser(
        "bench",
        add_help=False,
        help="benchmark claim strategies and memberships with real node processes (docs/benchmarks.md)",
    )
    bench.add_argument("bench_args", nargs=argparse.REMAINDER)  # main() hands these over untouched
    return parser


def _setup_logging(level: str | None, default: str) -> None:
    logging.getLogger("alembic").setLevel(logging.WARNING)
    logging.basicConfig(
        level=level or default,
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 failed, 2 invalid input)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:
        from .bench import cli as bench_cli

        return bench_cli.main(argv[1:], prog="tickwork bench")
    args = _parser().parse_args(argv)
    _setup_logging(args.log_level, "INFO" if args.command == "run" else "WARNING")
    try:
        return _dispatch(args)
    except (ConfigError, TriggerError, DeclarationError, ExecutorError) as exc:
        print(f"tickwork: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except TickworkError as exc:  # a state the command cannot act on: unknown name, old schema, ...
        print(f"tickwork: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "next":
        return _next(args)
    config = load(args.config)
    # Like gunicorn/celery: job modules and targets are importable from the working directory,
    # which the `tickwork` console script (unlike `python -m`) does not put on sys.path.
    if args.command in ("run", "jobs") and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    if args.command == "run":
        Node(config).run(args.duration)
        return 0
    if args.command == "db":
        return _upgrade(config)
    store = build_store(config, plugin_manager_for(config))
    store.open()
    try:
        if args.command == "jobs":
            return _jobs(args, config, store)
        if args.command == "history":
            return _history(args, store)
        if args.command == "nodes":
            for node in store.nodes():
                print(f"{node.id}\tstarted {iso_z(node.started_at)}\theartbeat {iso_z(node.heartbeat_at)}")
            return 0
    finally:
        store.close()
    raise AssertionError(args.command)


def _upgrade(config: Config) -> int:
    store = build_store(config, plugin_manager_for(config))
    try:
        store.upgrade()
    except CommandError as exc:  # e.g. a revision this tickwork does not know (written by a newer one)
        raise TickworkError(f"cannot migrate {_describe(store)}: {exc}") from exc
    finally:
        store.close()
    print(f"{_describe(store)} is at the latest schema")
    return 0


def _describe(store: Store) -> str:
    describe = getattr(store, "describe", None)
    return str(describe()) if callable(describe) else f"the {type(store).__name__} database"


def _next(args: argparse.Namespace) -> int:
    # Lookups without an explicit manager use the process's one, built here from the config.
    manager = plugin_manager_for(load(args.config))
    if args.normalize:
        kind = args.kind or detect_kind(args.expression, manager)
        print(get_trigger(kind, args.expression, args.tz or "UTC", manager).normalized())
        return 0
    after = args.after or datetime.now(UTC)
    times = next_fire_times(args.expression, kind=args.kind, tz=args.tz, after=after, n=args.n)
    for value in times:
        print(iso_z(value))
    if len(times) < args.n:
        # stdout stays machine-readable: only fire times, one per line.
        print(f"tickwork: {args.expression!r} fires {len(times)} time(s) after {iso_z(after)}", file=sys.stderr)
    return 0


def _row(s: Schedule) -> dict[str, Any]:
    return {
        "name": s.name,
        "kind": s.spec.trigger_kind,
        "expression": s.spec.expression,
        "timezone": s.spec.timezone,
        "executor": s.spec.executor,
        "target": s.spec.target,
        "enabled": s.spec.enabled,
        "next_fire": iso_z(s.next_fire) if s.next_fire else None,
        "state": s.state.value,
        "claimed_by": s.claimed_by,
        "module": s.spec.module,
        "fault": s.fault,
    }


def _jobs(args: argparse.Namespace, config: Config, store: Store) -> int:
    manager = plugin_manager_for(config)
    if args.action == "list":
        rows = [_row(s) for s in store.list_schedules()]
        if args.json:
            for row in rows:
                print(json.dumps(row))
        else:
            for r in rows:
                flag = "" if r["enabled"] else " (disabled)"
                if r["fault"]:
                    flag += f" (parked: {r['fault']})"
                print(
                    f"{r['name']}\t{r['kind']} {r['expression']!r} {r['timezone']}\t{r['executor']}:{r['target']}\t"
                    f"next {r['next_fire'] or '-'}\t{r['state']}{flag}"
                )
        return 0
    if args.action == "add":
        try:
            arguments = json.loads(args.args)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--args: not valid JSON: {exc}") from exc
        if not isinstance(arguments, dict):
            raise ConfigError("--args: must be a JSON object")
        kind = args.kind or detect_kind(args.expression, manager)
        get_trigger(kind, args.expression, args.tz, manager)
        executor_name = args.executor or config.scheduler.default_executor
        executors = build_executors(config, manager)
        if executor_name not in executors:
            executors[executor_name] = manager.executors.get(executor_name)()
        executors[executor_name].validate_target(args.target, arguments)
        try:
            spec = ScheduleSpec(
                name=args.name,
                trigger_kind=kind,
                expression=args.expression,
                timezone=args.tz,
                executor=executor_name,
                target=args.target,
                arguments=arguments,
                timeout=timedelta(seconds=args.timeout),
                enabled=not args.disabled,
                misfire=MisfirePolicy(args.misfire) if args.misfire else None,
                retries=args.retries,
                retry_backoff=timedelta(seconds=args.retry_backoff),
            )
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        s = admin.add(store, spec, manager)
        print(f"added {s.name}; next fire {iso_z(s.next_fire)}")
        return 0
    if args.action == "remove":
        module = store.get(args.name).spec.module
        store.remove(args.name)
        print(f"removed {args.name}")
        if module:
            print(
                f"tickwork: note: {args.name} is declared in {module}; the next node start re-creates it "
                f"unless the declaration is removed (disable it to keep it off)",
                file=sys.stderr,
            )
    elif args.action in ("enable", "disable"):
        s = admin.set_enabled(store, args.name, args.action == "enable", manager)
        print(f"{args.action}d {s.name}; next fire {iso_z(s.next_fire)}")
    elif args.action == "trigger":
        # A disabled schedule is never claimed, so making it due would silently do nothing.
        if not store.get(args.name).spec.enabled:
            raise TickworkError(f"schedule {args.name!r} is disabled; enable it first (tickwork jobs enable)")
        s = store.fire_now(args.name)
        print(f"triggered {s.name}; due {iso_z(s.next_fire)}")
    return 0


def _history(args: argparse.Namespace, store: Store) -> int:
    records = store.history(limit=args.limit, schedule=args.schedule)
    for r in records:
        if args.json:
            print(json.dumps(r.as_json()))
        else:
            err = f"\t{(r.error or '').splitlines()[0][:100]}" if r.error else ""
            print(f"{iso_z(r.scheduled_for)}\t{r.schedule}\t{r.status.value}\t{r.node or '-'}{err}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
