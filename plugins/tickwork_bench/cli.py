"""``tickwork bench`` options and the run: expand the selection into cells, measure, report.

Wired into ``tickwork`` as a subcommand through :func:`add_arguments` and :func:`run`; also
runnable as ``python -m tickwork_bench``.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tickwork.config import SchedulerConfig
from tickwork.errors import ConfigError, TickworkError
from tickwork.plugin.manager import default_manager

from .calibrate import python_speed_ms
from .cells import RAW, SINGLE, STORES, SYNC, TENANTS, WORKLOADS, Cell, Plan, expand
from .handoffcli import run_handoff, wants_handoff
from .metrics import CellResult
from .options import EXIT_FAILED, EXIT_USAGE, FULL, QUICK, UsageError, add_arguments
from .progress import Progress
from .raw import run_raw_cell
from .report import attach_baseline_ratios, attach_raw_ratios, document, failures, table, write_json
from .rounds import median_results, summarize, summary_table
from .scratch import MySQLScratch, PostgresScratch, Scratch, SQLiteScratch
from .sync import run_sync_cell, sync_summary
from .tenants import run_tenants_cell, tenants_summary
from .workloads import Settings, run_cell, summary


def _list(text: str, option: str) -> list[str]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise UsageError(f"{option}: empty list")
    return list(dict.fromkeys(items))


def _claims_by_store(stores: Sequence[str], claims: Sequence[str]) -> dict[str, list[str]]:
    manager = default_manager()
    supported = {store: list(manager.stores.get(store).claim_strategies) for store in stores}
    if list(claims) == ["all"]:
        return supported
    if list(claims) == ["default"]:
        return {store: names[:1] for store, names in supported.items()}
    everywhere = {c for names in supported.values() for c in names}
    unknown = [c for c in claims if c not in everywhere]
    if unknown:
        known = ", ".join(sorted(everywhere))
        raise UsageError(f"--claim: {', '.join(unknown)} not supported by {', '.join(stores)} (known: {known})")
    chosen = {store: [c for c in claims if c in names] for store, names in supported.items()}
    for store, names in chosen.items():
        if not names:
            raise UsageError(f"--claim: none of {', '.join(claims)} is supported by the {store} store")
    return chosen


def plan_from(args: argparse.Namespace) -> Plan:
    """Expand the options into cells; :class:`UsageError` names the bad option."""
    profile = QUICK if args.quick else FULL
    stores = _list(args.store or profile.stores, "--store")
    for store in stores:
        if store not in STORES:
            raise UsageError(f"--store: {store!r} is not one of {', '.join(STORES)}")
    workloads = _list(args.workload or profile.workloads, "--workload")
    for workload in workloads:
        if workload not in WORKLOADS:
            raise UsageError(f"--workload: {workload!r} is not one of {', '.join(WORKLOADS)}")
    try:
        nodes = [int(n) for n in _list(args.nodes or profile.nodes, "--nodes")]
    except ValueError:
        raise UsageError(f"--nodes: expected integers, got {args.nodes!r}") from None
    if any(n < 1 for n in nodes):
        raise UsageError(f"--nodes: node counts must be >= 1, got {args.nodes}")
    for option, setting in (
        ("--lookahead", SchedulerConfig.lookahead),
        ("--end-batch-window", SchedulerConfig.end_batch_window),
        ("--start-batch-window", SchedulerConfig.start_batch_window),
        ("--steal-after", SchedulerConfig.steal_after),
    ):
        try:  # the nodes' [scheduler] ranges, from their declarations
            setting.check(option, getattr(args, setting.key))
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
    memberships = _list(args.membership or profile.memberships, "--membership")
    registered = default_manager().memberships.names()
    for membership in memberships:
        if membership not in registered:
            raise UsageError(f"--membership: {membership!r} is not registered (registered: {', '.join(registered)})")
    if any(n > 1 for n in nodes) and not [m for m in memberships if m != SINGLE]:
        raise UsageError("--membership: K > 1 needs a membership other than single (e.g. hashring or all)")
    return expand(
        stores=stores,
        claims_by_store=_claims_by_store(stores, _list(args.claim or profile.claims, "--claim")),
        memberships=memberships,
        nodes=nodes,
        workloads=workloads,
        burst_schedules=args.schedules or profile.schedules,
        stored=args.stored,
        steady_schedules=args.steady_schedules or profile.steady_schedules,
        steady_seconds=args.steady_seconds or profile.steady_seconds,
        raw=not args.no_raw,
        rounds=args.rounds,
    )


def _scratch(store: str, args: argparse.Namespace) -> Scratch:
    if store == "postgres":
        return PostgresScratch(args.pg_url)
    if store == "mysql":
        return MySQLScratch(args.mysql_url)
    return SQLiteScratch()


def measure(
    plan: Plan, settings: Settings, args: argparse.Namespace, progress: Progress
) -> tuple[list[CellResult], list[dict[str, Any]]]:
    """Run every cell; scratch databases are created on first use and always removed."""
    scratches: dict[str, Scratch] = {}
    results: list[CellResult] = []
    try:
        for index, cell in enumerate(plan.cells, start=1):
            if cell.store not in scratches:
                scratches[cell.store] = _scratch(cell.store, args)
            progress.start_cell(cell.label)
            if cell.claim == RAW:
                runner = run_raw_cell
            elif cell.workload == SYNC:
                runner = run_sync_cell
            elif cell.workload == TENANTS:
                runner = run_tenants_cell
            else:
                runner = run_cell
            result = runner(index, cell, scratches[cell.store], settings, progress)
            results.append(result)
            summarize = {SYNC: sync_summary, TENANTS: tenants_summary}.get(cell.workload, summary)
            progress.end_cell(summarize(result))
    except KeyboardInterrupt:
        progress.message("interrupted: reporting the cells measured so far")
    finally:
        databases = [s.describe() for s in scratches.values()]
        for scratch in scratches.values():
            scratch.close()
    return results, databases


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def stop_on_sigterm() -> None:
    """Make SIGTERM (``kill``, a CI job's timeout, ``timeout(1)``) stop a run as Ctrl-C does: the
    run stops its nodes, workers and beats, drops its scratch databases and reports what it
    measured. With the default action the bench died at once and left its node and worker
    processes (each in a process group of its own) loading the machine."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)


def run(args: argparse.Namespace) -> int:
    """Run ``tickwork bench``; returns 0, 1 (a cell failed or fired twice) or 2 (invalid options)."""
    stop_on_sigterm()
    if wants_handoff(args):
        return run_handoff(args, _scratch)
    try:
        plan = plan_from(args)
    except (UsageError, TickworkError) as exc:
        print(f"tickwork bench: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    work_dir = Path(tempfile.mkdtemp(prefix="tickwork-bench-logs-"))
    settings = Settings(
        work_dir=work_dir,
        batch_size=args.batch_size,
        max_in_flight=args.max_in_flight,
        lookahead=args.lookahead,
        end_batch_window=args.end_batch_window,
        start_batch_window=args.start_batch_window,
        steal_after=args.steal_after,
        workers=args.workers,
        settle=args.settle,
        profile_dir=args.profile,
        node_imports=tuple(args.node_import),
        fresh_stats=not args.stale_stats,
        metrics=args.metrics,
    )
    logging.getLogger("alembic").setLevel(logging.WARNING)
    progress = Progress(len(plan), enabled=not args.no_progress)
    started_at = datetime.now(UTC).isoformat()
    t_start = time.monotonic()
    speed = {"start_ms": python_speed_ms()}
    try:
        results, databases = measure(plan, settings, args, progress)
    except TickworkError as exc:
        print(f"tickwork bench: {exc}", file=sys.stderr)
        shutil.rmtree(work_dir, ignore_errors=True)
        return EXIT_FAILED
    speed["end_ms"] = python_speed_ms()
    attach_raw_ratios(results)
    attach_baseline_ratios(results, plan.baseline)
    print(table(results))
    summaries = summarize(results)
    if summaries:
        print(f"\nmedian (lowest-highest) over {args.rounds} rounds:")
        print(summary_table(summaries))
    print(
        f"\nmachine speed: a fixed Python workload took {speed['start_ms']:.1f} ms at the start and "
        f"{speed['end_ms']:.1f} ms at the end (lower is faster; absolute numbers such as cpu s/1k follow it)"
    )
    problems = failures(results)
    if len(results) < len(plan):
        problems.append(f"only {len(results)} of {len(plan)} cells were measured")
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    if args.out is not None:
        doc = document(
            results,
            command=["tickwork", "bench", *sys.argv[1:]]
            if getattr(args, "command_line", None) is None
            else args.command_line,
            settings={
                "batch_size": settings.batch_size,
                "max_in_flight": settings.max_in_flight,
                "lookahead_s": settings.lookahead,
                "end_batch_window_s": settings.end_batch_window,
                "start_batch_window_s": settings.start_batch_window,
                "steal_after_s": settings.steal_after,
                "workers": settings.workers,
                "settle_s": settings.settle,
                "lead_s": settings.lead,
                "node_imports": list(settings.node_imports),
                "fresh_stats": settings.fresh_stats,
                "metrics": settings.metrics,
            },
            databases=databases,
            summaries=summaries,
            python_speed=speed,
            started_at=started_at,
            duration_s=time.monotonic() - t_start,
        )
        write_json(args.out, doc)
    if args.chart is not None:
        from .chart import write_chart

        try:
            # With several rounds, one bar per cell: its median.
            write_chart(args.chart, median_results(summaries) if summaries else results)
        except ImportError as exc:
            print(f"tickwork bench: {exc}", file=sys.stderr)
            problems.append(str(exc))
    if problems or args.keep_logs:
        print(f"node logs kept in {work_dir}", file=sys.stderr)
    else:
        shutil.rmtree(work_dir, ignore_errors=True)
    return EXIT_FAILED if problems else 0


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m tickwork_bench") -> int:
    """``python -m tickwork_bench`` (``tickwork bench`` passes ``prog="tickwork bench"``)."""
    parser = argparse.ArgumentParser(
        prog=prog, description="Benchmark claim strategies and memberships with real node processes."
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    args.command_line = [*prog.split(), *(sys.argv[1:] if argv is None else argv)]
    return run(args)


__all__ = ["Cell", "add_arguments", "main", "run"]
