"""``tickwork bench`` options and the run: expand the selection into cells, measure, report.

Wired into ``tickwork`` as a subcommand through :func:`add_arguments` and :func:`run`; also
runnable as ``python -m tickwork.bench``.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..config import MAX_LOOKAHEAD, SchedulerConfig
from ..engine.settings import MAX_END_BATCH_WINDOW, MAX_START_BATCH_WINDOW
from ..errors import TickworkError
from ..plugins import default_manager
from .calibrate import python_speed_ms
from .cells import RAW, SINGLE, STORES, SYNC, WORKLOADS, Cell, Plan, expand
from .metrics import CellResult
from .progress import Progress
from .raw import run_raw_cell
from .report import attach_baseline_ratios, attach_raw_ratios, document, failures, table, write_json
from .rounds import median_results, summarize, summary_table
from .scratch import MySQLScratch, PostgresScratch, Scratch, SQLiteScratch
from .sync import run_sync_cell, sync_summary
from .workloads import Settings, run_cell, summary

DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_MYSQL_URL = "mysql://root@127.0.0.1:3306/mysql"
EXIT_FAILED = 1
EXIT_USAGE = 2


@dataclass(frozen=True)
class Profile:
    """Defaults of a suite; every one can be overridden on the command line."""

    stores: str
    claims: str
    memberships: str
    nodes: str
    workloads: str
    schedules: int
    steady_schedules: int
    steady_seconds: float


#: The default suite (about 5 minutes on 2 cores) and ``--quick`` (under a minute).
FULL = Profile(
    stores="sqlite,postgres",
    claims="skip-locked,optimistic",
    memberships="hashring,all",
    nodes="1,4",
    workloads="burst,steady",
    schedules=10_000,
    steady_schedules=1_000,
    steady_seconds=3.0,
)
QUICK = Profile(
    stores="sqlite,postgres",
    claims="default",
    memberships="all",
    nodes="1,2",
    workloads="burst,steady",
    schedules=2_000,
    steady_schedules=200,
    steady_seconds=2.0,
)


class UsageError(TickworkError):
    """An invalid option; the message names it."""


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``bench`` options to ``parser``."""
    sel = parser.add_argument_group("what to measure (comma-separated lists)")
    sel.add_argument("--store", help=f"sqlite, postgres, mysql (default {FULL.stores})")
    sel.add_argument(
        "--claim",
        help=f"claim strategies, 'all', or 'default' (each store's default); each store runs those it supports "
        f"(default {FULL.claims})",
    )
    sel.add_argument(
        "--membership",
        help=f"registered memberships for K > 1; K = 1 always uses single (default {FULL.memberships})",
    )
    sel.add_argument("--nodes", help=f"node counts K (default {FULL.nodes})")
    sel.add_argument(
        "--workload",
        help=f"burst (all due at once), steady (all due every second), spread (the steady rate spread evenly "
        f"over each second), sync (node start with --schedules declared jobs, against their import time) "
        f"(default {FULL.workloads})",
    )
    sel.add_argument(
        "--schedules",
        type=_positive_int,
        help=f"burst: schedules due at once; sync: jobs declared (default {FULL.schedules})",
    )
    sel.add_argument(
        "--stored",
        type=_positive_int,
        default=0,
        help="schedules stored in all; the ones beyond those due are not due for hours (default: only the due ones; "
        "not for sync)",
    )
    sel.add_argument(
        "--steady-schedules",
        type=_positive_int,
        help=f"steady/spread: schedules each firing every second (default {FULL.steady_schedules})",
    )
    sel.add_argument(
        "--steady-seconds",
        type=_positive_float,
        help=f"steady/spread: seconds of firing (default {FULL.steady_seconds:g})",
    )
    sel.add_argument("--no-raw", action="store_true", help="skip the bare-driver ceiling cells")
    sel.add_argument(
        "--rounds",
        type=_positive_int,
        default=1,
        help="run every cell this many times, each round in the opposite order of the one before; ratios compare "
        "cells of the same round, and a second table gives each number's median and range (default 1)",
    )
    sel.add_argument("--quick", action="store_true", help="a small suite that takes under a minute")

    how = parser.add_argument_group("how")
    how.add_argument(
        "--pg-url",
        default=DEFAULT_PG_URL,
        help=f"admin URL; a scratch database is created there and dropped afterwards (default {DEFAULT_PG_URL})",
    )
    how.add_argument(
        "--mysql-url",
        default=DEFAULT_MYSQL_URL,
        help=f"MySQL / MariaDB admin URL for mysql cells; a scratch database is created there and dropped "
        f"afterwards (default {DEFAULT_MYSQL_URL})",
    )
    how.add_argument("--batch-size", type=_positive_int, default=100, help="claim batch size (default 100)")
    how.add_argument(
        "--lookahead",
        type=float,
        default=SchedulerConfig.lookahead,
        help="the nodes' [scheduler] lookahead in steady and spread cells: claim fires due within this many seconds "
        f"and start them on time from memory (default {SchedulerConfig.lookahead:g}, the node default; 0 claims when "
        "due). Burst cells always claim when due: they measure draining a backlog",
    )
    how.add_argument(
        "--end-batch-window",
        type=float,
        default=SchedulerConfig.end_batch_window,
        help="the nodes' [scheduler] end_batch_window: seconds a run's end may wait to share one write with others "
        f"(default {SchedulerConfig.end_batch_window:g}, the node default; 0 writes each pass's ends at once)",
    )
    how.add_argument(
        "--start-batch-window",
        type=float,
        default=SchedulerConfig.start_batch_window,
        help="the nodes' [scheduler] start_batch_window: seconds past its time a fire claimed ahead may wait to "
        f"start in one pass with others (default {SchedulerConfig.start_batch_window:g}, the node default; 0 wakes "
        "at each fire's time)",
    )
    how.add_argument(
        "--steal-after",
        type=_positive_float,
        default=SchedulerConfig.steal_after,
        help="the nodes' [scheduler] steal_after: seconds a fire may be overdue before nodes that do not own its "
        f"bucket claim it too (default {SchedulerConfig.steal_after:g}, the node default; only hashring cells)",
    )
    how.add_argument("--workers", type=_positive_int, default=8, help="local executor threads per node (default 8)")
    how.add_argument(
        "--settle",
        type=_positive_float,
        default=1.5,
        help="seconds between all nodes ready and arming when K > 1, whatever the membership (default 1.5: every "
        "node has heartbeated once more, so hash rings agree; cells compared with each other start alike)",
    )
    how.add_argument(
        "--stale-stats",
        action="store_true",
        help="do not ANALYZE after making the schedules due (claims plan on statistics from before)",
    )
    how.add_argument("--profile", metavar="DIR", type=Path, help="py-spy record node 1 of every cell into DIR")
    how.add_argument(
        "--node-import",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE in every node before it starts (try an engine/store change; needs PYTHONPATH)",
    )
    how.add_argument("--keep-logs", action="store_true", help="keep the node logs (kept anyway when a cell fails)")
    how.add_argument(
        "--metrics",
        action="store_true",
        help="run every node with the metrics plugin on ([metrics] port = 0: a free port each), to measure "
        "its cost against a run without (needs tickwork[metrics])",
    )

    out = parser.add_argument_group("output")
    out.add_argument("--out", type=Path, metavar="FILE", help="write the results as JSON")
    out.add_argument("--chart", type=Path, metavar="FILE", help="write a PNG chart (needs matplotlib)")
    out.add_argument("--no-progress", action="store_true", help="no progress line on stderr")


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
    if not 0 <= args.lookahead <= MAX_LOOKAHEAD:
        raise UsageError(f"--lookahead: must be between 0 and {MAX_LOOKAHEAD:g} seconds, got {args.lookahead}")
    if not 0 <= args.end_batch_window <= MAX_END_BATCH_WINDOW:
        raise UsageError(
            f"--end-batch-window: must be between 0 and {MAX_END_BATCH_WINDOW:g} seconds, got {args.end_batch_window}"
        )
    if not 0 <= args.start_batch_window <= MAX_START_BATCH_WINDOW:
        raise UsageError(
            f"--start-batch-window: must be between 0 and {MAX_START_BATCH_WINDOW:g} seconds, "
            f"got {args.start_batch_window}"
        )
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
            else:
                runner = run_cell
            result = runner(index, cell, scratches[cell.store], settings, progress)
            results.append(result)
            progress.end_cell(sync_summary(result) if cell.workload == SYNC else summary(result))
    except KeyboardInterrupt:
        progress.message("interrupted: reporting the cells measured so far")
    finally:
        databases = [s.describe() for s in scratches.values()]
        for scratch in scratches.values():
            scratch.close()
    return results, databases


def run(args: argparse.Namespace) -> int:
    """Run ``tickwork bench``; returns 0, 1 (a cell failed or fired twice) or 2 (invalid options)."""
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


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m tickwork.bench") -> int:
    """``python -m tickwork.bench`` (``tickwork bench`` passes ``prog="tickwork bench"``)."""
    parser = argparse.ArgumentParser(
        prog=prog, description="Benchmark claim strategies and memberships with real node processes."
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    args.command_line = [*prog.split(), *(sys.argv[1:] if argv is None else argv)]
    return run(args)


__all__ = ["Cell", "add_arguments", "main", "run"]
