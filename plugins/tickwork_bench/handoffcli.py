"""``tickwork bench --workload handoff``: checking its options, running it, reporting it (a text
summary, and the JSON file of ``--out`` shaped like the other workloads')."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tickwork.config import SchedulerConfig
from tickwork.errors import TickworkError
from tickwork.sql.dburl import masked

from .calibrate import python_speed_ms
from .handoff import HandoffRun, HandoffSettings
from .handoffprocs import DEFAULT_CONCURRENCY
from .options import EXIT_FAILED, EXIT_USAGE, UsageError
from .progress import Progress
from .report import code_version, machine, write_json
from .scratch import Scratch

HANDOFF = "handoff"
DEFAULT_SCHEDULES = 1000


def wants_handoff(args: argparse.Namespace) -> bool:
    return HANDOFF in [w.strip() for w in (args.workload or "").split(",")]


def settings_from(args: argparse.Namespace, work_dir: Path) -> HandoffSettings:
    """The run's settings; :class:`UsageError` names a bad option."""
    if [w.strip() for w in args.workload.split(",") if w.strip()] != [HANDOFF]:
        raise UsageError("--workload handoff runs alone (not with other workloads)")
    if args.executor == "rq" and not args.broker.startswith(("redis://", "rediss://")):
        raise UsageError("--broker: RQ needs Redis (redis://host:port/N)")
    if not args.broker.startswith(("amqp://", "redis://", "rediss://")):
        raise UsageError(f"--broker: expected amqp://... or redis://..., got {masked(args.broker)}")
    if args.beats and args.executor != "celery":
        raise UsageError("--beats: Celery beat is compared with the celery executor only (--executor celery)")
    # Options of the other workloads that this one would otherwise ignore without a word.
    ignored = {
        "--rounds": args.rounds != 1,
        "--profile": args.profile is not None,
        "--metrics": args.metrics,
        "--stale-stats": args.stale_stats,
    }
    for option, given in ignored.items():
        if given:
            raise UsageError(f"{option}: not supported by --workload handoff")
    try:
        nodes = int(args.nodes or "1")
    except ValueError:
        raise UsageError(f"--nodes: one node count for handoff, got {args.nodes!r}") from None
    if nodes < 1:
        raise UsageError(f"--nodes: must be >= 1, got {nodes}")
    membership = (args.membership or "hashring").split(",")[0].strip()
    if nodes > 1 and membership == "single":
        raise UsageError("--membership: K > 1 needs a membership other than single (e.g. hashring or all)")
    schedules = args.schedules or DEFAULT_SCHEDULES
    return HandoffSettings(
        schedules=schedules,
        nodes=nodes,
        executor=args.executor,
        broker=args.broker,
        beats=args.beats,
        membership=membership,
        work_dir=work_dir,
        concurrency=args.worker_concurrency or DEFAULT_CONCURRENCY[args.executor],
        publish_threads=args.publish_threads,
        lookahead=args.lookahead if args.lookahead is not None else SchedulerConfig.lookahead.default,
        batch_size=args.batch_size,
        max_in_flight=args.max_in_flight,
        timeout=args.handoff_timeout or max(120.0, schedules / 20.0),
        node_imports=tuple(args.node_import),
    )


def failures(result: dict[str, Any]) -> list[str]:
    """Why the run failed: errors, or tickwork not handing off and running every fire exactly once."""
    problems = list(result["errors"])
    tw = result.get("tickwork")
    if tw is None:
        return problems or ["nothing was measured"]
    if tw["duplicates"]:
        problems.append(f"tickwork: {tw['duplicates']} duplicate execution(s)")
    if tw["handed_off_s"] is None:
        problems.append(f"tickwork: not every fire was handed off, skipped or failed ({tw['history']})")
    if tw["ran"] < tw["handed_off"]:
        problems.append(f"tickwork: {tw['ran']} of the {tw['handed_off']} tasks handed off ran")
    return problems


def _s(value: float | None, fmt: str = ".2f") -> str:
    return "-" if value is None else format(value, fmt)


def summary(result: dict[str, Any]) -> str:
    """The run in a few lines of text."""
    lines = [
        f"handoff: {result['schedules']:,} schedules due at {result['t0']}, {result['nodes']} node(s) "
        f"({result['membership']}, {result['store']}), executor {result['executor']}"
    ]
    tw = result.get("tickwork")
    if tw is not None:
        lag = tw["task_lag"]
        lines.append(
            f"  tickwork: handed off (broker-confirmed) {tw['handed_off']:,} of {tw['schedules']:,} in "
            f"{_s(tw['handed_off_s'])} s "
            f"({_s(tw['handed_off_per_s'], ',.0f')}/s); ran {tw['ran']:,} in {_s(tw['ran_s'])} s "
            f"({_s(tw['ran_per_s'], ',.0f')}/s); task start after the due time p50/p99/max "
            f"{_s(lag['p50_ms'], ',.0f')}/{_s(lag['p99_ms'], ',.0f')}/{_s(lag['max_ms'], ',.0f')} ms; "
            f"duplicates {tw['duplicates']}"
        )
        raw = result.get("raw_publish")
        if raw is not None:
            lines.append(
                f"  broker raw publish ({raw['client']}): {raw['messages']:,} in {raw['seconds']:.2f} s "
                f"({raw['per_s']:,.0f}/s); hand-off / raw = {_s(tw.get('to_raw'), '.2f')}"
            )
        if tw["not_handed_off"]:
            lines.append(f"  tickwork: {tw['not_handed_off']:,} fires not handed off: {tw['history']}")
    beat = result.get("beat")
    if beat is not None:
        for name, b in beat["by_beat"].items():
            lag = b["send_lag"]
            lines.append(
                f"  celery {name}: sent {b['sent_in_minute']:,} of {beat['schedules']:,} within the minute "
                f"({_s(b['sent_per_s'], ',.0f')}/s); send lag p50/p99/max {_s(lag['p50_ms'], ',.0f')}/"
                f"{_s(lag['p99_ms'], ',.0f')}/{_s(lag['max_ms'], ',.0f')} ms"
            )
        lines.append(
            f"  celery beat ({beat['beats']}): {beat['entries_sent']:,} entries sent, {beat['entries_not_sent']:,} "
            f"not sent that minute; {beat['executions']:,} executions of {beat['entries_run']:,} entries, "
            f"{beat['duplicates']:,} duplicate(s) ({beat['entries_run_twice_or_more']:,} entries ran twice or more)"
        )
    return "\n".join(lines)


def run_handoff(args: argparse.Namespace, make_scratch: Callable[[str, argparse.Namespace], Scratch]) -> int:
    """Run the hand-off workload; 0, 1 (failed, or tickwork ran a fire twice) or 2 (usage)."""
    work_dir = Path(tempfile.mkdtemp(prefix="tickwork-bench-handoff-"))
    try:
        settings = settings_from(args, work_dir)
        store = (args.store or "postgres").split(",")[0].strip()
        scratch = make_scratch(store, args)
    except (UsageError, TickworkError) as exc:
        print(f"tickwork bench: {exc}", file=sys.stderr)
        shutil.rmtree(work_dir, ignore_errors=True)
        return EXIT_USAGE if isinstance(exc, UsageError) else EXIT_FAILED
    progress = Progress(1, enabled=not args.no_progress)
    started_at = datetime.now(UTC).isoformat()
    t_start = time.monotonic()
    # The machine is usually shared: what else ran is part of the result.
    load = {"start": os.getloadavg()}
    speed = {"start_ms": python_speed_ms()}
    progress.start_cell(f"handoff {settings.executor} K={settings.nodes} N={settings.schedules}")
    try:
        result = HandoffRun(scratch, settings, progress).run()
    finally:
        database = scratch.describe()
        scratch.close()
    result["broker"] = masked(settings.broker)
    load["end"] = os.getloadavg()
    speed["end_ms"] = python_speed_ms()
    problems = failures(result)
    progress.end_cell("FAILED" if problems else "ok")
    print(summary(result))
    print(
        f"\nload average (1/5/15 min) {'/'.join(f'{x:.1f}' for x in load['start'])} at the start, "
        f"{'/'.join(f'{x:.1f}' for x in load['end'])} at the end, on {os.cpu_count()} cores; a fixed Python "
        f"workload took {speed['start_ms']:.1f} ms at the start and {speed['end_ms']:.1f} ms at the end"
    )
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    if args.out is not None:
        write_json(
            args.out,
            {
                "command": getattr(args, "command_line", None) or ["tickwork", "bench", *sys.argv[1:]],
                "started_at": started_at,
                "duration_s": round(time.monotonic() - t_start, 1),
                "machine": {**machine(), "loadavg": load, "python_workload_ms": speed},
                "code": code_version(),
                "databases": [database],
                "settings": {
                    "node_imports": list(settings.node_imports),
                    "worker_concurrency": settings.concurrency,
                    "publish_threads": settings.publish_threads,
                    "lookahead_s": settings.lookahead,
                    "batch_size": settings.batch_size,
                    "max_in_flight": settings.max_in_flight,
                    "timeout_s": settings.timeout,
                },
                "failed": bool(problems),
                "cells": [result],
            },
        )
    if problems or args.keep_logs:
        print(f"logs kept in {work_dir}", file=sys.stderr)
    else:
        shutil.rmtree(work_dir, ignore_errors=True)
    return EXIT_FAILED if problems else 0
