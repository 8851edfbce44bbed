"""The ``tickwork`` command line."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from . import schedules as admin
from .abc import Store
from .config import Config, load, plugin_manager_for
from .errors import (
    ConfigError,
    DeclarationError,
    ExecutorError,
    ScheduleExistsError,
    ScheduleNotFoundError,
    TickworkError,
    TriggerError,
)
from .node import Node, build_executors, build_store
from .structures import MisfirePolicy, Schedule, ScheduleSpec
from .triggers import detect_kind, get_trigger

log = logging.getLogger("tickwork.cli")

#: Exit status for invalid input (bad expression, config, arguments).
EXIT_USAGE = 2


def iso_z(value: datetime | None) -> str:
    if value is None:
        return "-"
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", "-c", metavar="FILE", help="TOML config (default: $TICKWORK_CONFIG, ./tickwork.toml)")
    common.add_argument("--log-level", default=None, help="DEBUG, INFO (default for run), WARNING (default)")

    parser = argparse.ArgumentParser(prog="tickwork", description="Periodic jobs, exactly once per due time.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", parents=[common], help="run a scheduler node")
    run.add_argument("--for", dest="duration", type=float, metavar="SECONDS", help="stop cleanly after SECONDS")

    nxt = sub.add_parser("next", parents=[common], help="print the next fire times of an expression")
    nxt.add_argument("expression")
    nxt.add_argument("--kind", help="trigger kind (cron, calendar, interval, once); recognised when omitted")
    nxt.add_argument("--tz", default=None, help="IANA time zone the expression is evaluated in (default UTC)")
    nxt.add_argument("--after", type=parse_time, help="ISO-8601 start (default: now)")
    nxt.add_argument("-n", type=int, default=1, help="how many fire times (default 1)")
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
    ja.add_argument("--timeout", type=float, default=300.0, help="soft timeout in seconds (default 300)")
    ja.add_argument("--misfire", choices=[p.value for p in MisfirePolicy])
    ja.add_argument("--retries", type=int, default=0)
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
    hist.add_argument("--limit", type=int, default=20)
    hist.add_argument("--schedule", help="only this schedule")

    db = sub.add_parser("db", help="database schema")
    dsub = db.add_subparsers(dest="action", required=True, metavar="ACTION")
    dsub.add_parser("upgrade", parents=[common], help="apply pending migrations")

    sub.add_parser("nodes", parents=[common], help="list nodes and their heartbeats")
    return parser


def _setup_logging(level: str | None, default: str) -> None:
    logging.getLogger("alembic").setLevel(logging.WARNING)
    logging.basicConfig(
        level=(level or default).upper(),
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _setup_logging(args.log_level, "INFO" if args.command == "run" else "WARNING")
    try:
        return _dispatch(args)
    except (ConfigError, TriggerError, DeclarationError, ExecutorError) as exc:
        print(f"tickwork: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (ScheduleNotFoundError, ScheduleExistsError) as exc:
        print(f"tickwork: error: {exc}", file=sys.stderr)
        return 1
    except TickworkError as exc:
        print(f"tickwork: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "next":
        return _next(args)
    config = load(args.config)
    if args.command == "run":
        # Like gunicorn/celery: job modules named in the config are importable from here.
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        Node(config).run(args.duration)
        return 0
    if args.command == "db":
        store = build_store(config, plugin_manager_for(config))
        store.upgrade()
        print(f"{getattr(store, 'describe', lambda: 'database')()} is at the latest schema")
        store.close()
        return 0
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


def _next(args: argparse.Namespace) -> int:
    if args.n < 0:
        raise ConfigError(f"-n must be >= 0, got {args.n}")
    kind = args.kind or detect_kind(args.expression)
    trigger = get_trigger(kind, args.expression, args.tz or "UTC")
    if args.normalize:
        print(trigger.normalized())
        return 0
    current = args.after or datetime.now(timezone.utc)
    printed = 0
    while printed < args.n:
        nxt = trigger.next_after(current)
        if nxt is None:
            break
        print(iso_z(nxt))
        printed += 1
        current = nxt
    if printed == 0 and args.n > 0:
        print("never")
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
    }


def _jobs(args: argparse.Namespace, config: Config, store: Store) -> int:
    manager = plugin_manager_for(config)
    if args.action == "list":
        rows = [_row(s) for s in store.list()]
        if args.json:
            for row in rows:
                print(json.dumps(row))
        else:
            for r in rows:
                flag = "" if r["enabled"] else " (disabled)"
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
            )
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        s = admin.add(store, spec, manager)
        print(f"added {s.name}; next fire {iso_z(s.next_fire)}")
        return 0
    if args.action == "remove":
        store.remove(args.name)
        print(f"removed {args.name}")
    elif args.action in ("enable", "disable"):
        s = admin.set_enabled(store, args.name, args.action == "enable", manager)
        print(f"{args.action}d {s.name}; next fire {iso_z(s.next_fire)}")
    elif args.action == "trigger":
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
