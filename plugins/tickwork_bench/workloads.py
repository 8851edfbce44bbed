"""Running one cell: seed, start the nodes, make the schedules due, wait, stop, measure.

- **burst**: every schedule due at one instant; the cell ends when all runs have ended.
- **steady**: every schedule fires every second (``* * * * * *``) for ``cell.seconds`` seconds, so
  all of them are due at each whole second.
- **spread**: the same rate, but schedule ``i`` of ``S`` fires at ``i/S`` past each second (an
  ``interval`` trigger anchored at that phase): one fire every ``1/S`` seconds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from tickwork.config import SchedulerConfig

from .cells import Cell
from .metrics import CellResult, burst_metrics, node_metrics, nothing_fired, steady_metrics
from .procs import Child, ChildError, collect
from .progress import Progress
from .scratch import YEARLY, Armed, DueSet, Scratch

STEADY_EXPRESSION = "* * * * * *"
POLL_SECONDS = 0.2


@dataclass(frozen=True)
class Settings:
    """How cells are run (not what they measure).

    :param lead: seconds from arming to the due instant
    :param settle: seconds to wait after all nodes are ready when K > 1, so memberships converge
    :param steady_grace: seconds after a steady window before the nodes are stopped
    """

    work_dir: Path
    batch_size: int = 100
    max_in_flight: int = SchedulerConfig.max_in_flight.default
    #: not in burst cells: a burst is a backlog, due when the nodes first see it
    lookahead: float = SchedulerConfig.lookahead.default
    end_batch_window: float = SchedulerConfig.end_batch_window.default
    start_batch_window: float = SchedulerConfig.start_batch_window.default
    steal_after: float = SchedulerConfig.steal_after.default
    workers: int = 8
    lead: float = 1.0
    settle: float = 1.5
    steady_grace: float = 1.0
    ready_timeout: float = 60.0
    stop_timeout: float = 60.0
    min_burst_rate: float = 100.0
    stall_seconds: float = 20.0
    fresh_stats: bool = True
    profile_dir: Path | None = None
    membership_options: dict[str, Any] = field(default_factory=dict)
    node_imports: tuple[str, ...] = ()
    #: run the nodes with the metrics plugin on (its cost: metrics on vs off)
    metrics: bool = False


def cpu_by_pid(pids: Sequence[int]) -> dict[int, float]:
    """CPU seconds (user + system) each of the processes ``pids`` has used so far; a process that
    is gone (or everything, without psutil) is left out."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is in the bench extra
        return {}
    out = {}
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        out[pid] = t.user + t.system
    return out


class CpuMeter:
    """Where the machine's CPU went over an interval: our children, the database server, the rest.

    The rest (other users of the machine) makes fires/s noisy; it is reported so a reader can tell.
    """

    def __init__(self, children: Sequence[int], database: str | None) -> None:
        try:
            import psutil
        except ImportError:  # pragma: no cover - psutil is in the bench extra
            self._psutil: Any = None
            return
        self._psutil = psutil
        self._children = list(children)
        self._database = database
        self._start = psutil.cpu_times()
        self._mono = time.monotonic()
        self._kids0 = cpu_by_pid(self._children)
        self._db0 = self._db_cpu()
        me = psutil.Process().cpu_times()
        self._me0 = me.user + me.system

    def _db_cpu(self) -> dict[int, float]:
        """CPU of the server backends serving ``database`` (their title names it)."""
        if self._database is None:
            return {}
        pids = []
        marker = f" {self._database} "
        for proc in self._psutil.process_iter(["cmdline"]):
            title = " ".join(proc.info["cmdline"] or ())
            if title.startswith("postgres:") and marker in title + " ":
                pids.append(proc.pid)
        return cpu_by_pid(pids)

    def stop(self) -> dict[str, float | None]:
        """Shares of the machine's capacity (all cores) over the interval, in percent."""
        if self._psutil is None:
            return {}
        end = self._psutil.cpu_times()
        wall = time.monotonic() - self._mono
        capacity = wall * (self._psutil.cpu_count() or 1)
        idle = (end.idle + getattr(end, "iowait", 0.0)) - (self._start.idle + getattr(self._start, "iowait", 0.0))
        busy = max(0.0, (sum(end) - sum(self._start)) - idle)
        kids = sum(v - self._kids0.get(pid, 0.0) for pid, v in cpu_by_pid(self._children).items())
        db = sum(v - self._db0.get(pid, 0.0) for pid, v in self._db_cpu().items())
        me = self._psutil.Process().cpu_times()
        harness = me.user + me.system - self._me0
        if capacity <= 0:
            return {}
        return {
            "machine_busy_pct": 100.0 * busy / capacity,
            "nodes_cpu_pct": 100.0 * kids / capacity,
            "db_cpu_pct": 100.0 * db / capacity,
            "db_cpu_s": db if self._database is not None else None,
            # Everything that is neither ours nor the database: other users of the machine.
            "other_cpu_pct": max(0.0, 100.0 * (busy - kids - db - harness) / capacity),
        }


def node_args(cell: Cell, scratch: Scratch, settings: Settings, node_id: str, max_seconds: float) -> list[str]:
    store_options = {**scratch.store_options(), "claim": cell.claim, "batch_size": settings.batch_size}
    return [
        "--node-id",
        node_id,
        "--store",
        scratch.plugin,
        "--store-options",
        json.dumps(store_options),
        "--membership",
        cell.membership,
        "--membership-options",
        json.dumps(settings.membership_options if cell.membership not in ("single", "all") else {}),
        "--workers",
        str(settings.workers),
        "--max-seconds",
        str(max_seconds),
        "--lookahead",
        str(0.0 if cell.workload == "burst" else settings.lookahead),
        "--end-batch-window",
        str(settings.end_batch_window),
        "--start-batch-window",
        str(settings.start_batch_window),
        "--steal-after",
        str(settings.steal_after),
        "--max-in-flight",
        str(settings.max_in_flight),
        *(arg for module in settings.node_imports for arg in ("--import", module)),
        *(["--metrics"] if settings.metrics else []),
    ]


def due_set_for(cell: Cell) -> DueSet:
    """The triggers (and first-fire offsets) of the schedules a cell makes due."""
    if cell.workload == "burst":
        return DueSet("cron", lambda _i: YEARLY)
    if cell.workload == "steady":
        return DueSet("cron", lambda _i: STEADY_EXPRESSION)

    def phase(i: int) -> int:
        return i * 1_000_000 // cell.schedules

    return DueSet(
        "interval",
        lambda i: f"1s@1970-01-01T00:00:00.{phase(i):06d}Z",
        offset=lambda i: timedelta(microseconds=phase(i)),
    )


def burst_timeout(cell: Cell, settings: Settings) -> float:
    return max(30.0, cell.schedules / settings.min_burst_rate)


def wait_burst(scratch: Scratch, cell: Cell, armed: Armed, settings: Settings, progress: Progress) -> str | None:
    """Poll the history until every due schedule has an ended run; an error text on timeout."""
    deadline = armed.local_deadline(burst_timeout(cell, settings))
    done = 0
    # Nodes that keep failing (a store error) would otherwise hold the cell until the deadline.
    last_change = armed.local_deadline(0.0)
    while time.monotonic() < deadline:
        now = scratch.finished_runs()
        progress.update(now, cell.schedules)
        if now >= cell.schedules:
            return None
        if now != done:
            done, last_change = now, time.monotonic()
        elif time.monotonic() - last_change > settings.stall_seconds:
            return (
                f"burst stalled: no run ended for {settings.stall_seconds:g}s ({done} of {cell.schedules} ended); "
                "see the node logs"
            )
        time.sleep(POLL_SECONDS)
    return f"burst not drained within {burst_timeout(cell, settings):g}s: {done} of {cell.schedules} runs ended"


def processes_cpu(pids: Sequence[int]) -> float | None:
    """CPU seconds (user + system) the processes ``pids`` have used so far; ``None`` without
    psutil or when one of them is gone."""
    by_pid = cpu_by_pid(pids)
    return sum(by_pid.values()) if by_pid and len(by_pid) == len(pids) else None


def wait_steady(
    scratch: Scratch, cell: Cell, armed: Armed, settings: Settings, progress: Progress, pids: Sequence[int]
) -> float | None:
    """Wait until the fire window and its grace have passed; returns the CPU seconds the node
    processes ``pids`` used during the fire window ``[T0, T0 + seconds)`` alone (``None`` if it
    could not be read): what the nodes cost while firing, without their start and stop."""
    expected = int(cell.schedules * cell.seconds)
    marks = [armed.local_deadline(0.0), armed.local_deadline(cell.seconds)]
    readings: list[float | None] = []
    deadline = armed.local_deadline(cell.seconds + settings.steady_grace)
    while time.monotonic() < deadline:
        if marks and time.monotonic() >= marks[0]:
            marks.pop(0)
            readings.append(processes_cpu(pids))
            continue
        progress.update(min(scratch.finished_runs(), expected), expected)
        until = min([deadline, *marks[:1]])
        time.sleep(min(0.5, max(0.0, until - time.monotonic())))
    if len(readings) == 2 and readings[0] is not None and readings[1] is not None:
        return readings[1] - readings[0]
    return None


def start_children(
    cell: Cell, index: int, settings: Settings, make: Callable[[int], tuple[str, str, list[str]]]
) -> list[Child]:
    children = []
    for k in range(cell.nodes):
        name, module, args = make(k)
        children.append(Child(name, module, args, settings.work_dir / f"cell{index:03d}-{name}.log"))
    return children


def start_nodes(cell: Cell, index: int, scratch: Scratch, settings: Settings, max_seconds: float) -> list[Child]:
    """The cell's K tickwork node processes (``tickwork_bench.nodeproc``), each told to stop by
    itself ``max_seconds`` + 30 s after its start at the latest."""
    return start_children(
        cell,
        index,
        settings,
        lambda k: (
            f"node{k + 1}",
            "tickwork_bench.nodeproc",
            node_args(cell, scratch, settings, f"bench-node-{k + 1}", max_seconds + 30),
        ),
    )


def stop_children(children: Sequence[Child], result: CellResult, settings: Settings) -> None:
    """Stop the cell's processes and keep what each reported (its ``result`` line, without the
    event name) and every error in ``result``."""
    for child in children:
        child.terminate()
    reports, errors = collect(children, "result", settings.stop_timeout)
    result.nodes = [{k: v for k, v in r.items() if k != "event"} for r in reports]
    result.errors.extend(errors)


def run_cell(index: int, cell: Cell, scratch: Scratch, settings: Settings, progress: Progress) -> CellResult:
    """Measure one tickwork cell (K node processes)."""
    result = CellResult(cell)
    scratch.prepare(index)
    progress.update(0, 0, "seeding")
    burst = cell.workload == "burst"
    scratch.seed(cell.schedules, cell.stored, due_set_for(cell))
    max_seconds = settings.ready_timeout + settings.settle + settings.lead
    max_seconds += burst_timeout(cell, settings) if burst else cell.seconds + settings.steady_grace
    children = start_nodes(cell, index, scratch, settings, max_seconds)
    armed: Armed | None = None
    shares: dict[str, float | None] = {}
    window_cpu: float | None = None
    try:
        progress.update(0, 0, "starting nodes")
        for child in children:
            child.wait_event("ready", settings.ready_timeout)
        if settings.profile_dir is not None:
            children[0].profile(
                settings.profile_dir
                / f"cell{index:03d}-{cell.store}-{cell.claim}-{cell.membership}-K{cell.nodes}-{cell.workload}.txt"
            )
        # A ring membership learns of the other nodes at their next heartbeat. Every multi-node cell
        # waits as long, whatever its membership: cells compared with each other (vs all) start
        # alike, and their node CPU (counted from the ready line) includes the same idle time.
        time.sleep(settings.settle if cell.nodes > 1 else 0.2)
        armed = scratch.arm(settings.lead, align=not burst, fresh_stats=settings.fresh_stats)
        # After arming: making S schedules due (and ANALYZE) is the harness's work, and in a table
        # of 1M it would be charged to tickwork as 0.2 s of database CPU per 10,000 fires.
        cpu = CpuMeter([c.proc.pid for c in children], scratch.database_name())
        if burst:
            error = wait_burst(scratch, cell, armed, settings, progress)
            if error:
                result.errors.append(error)
        else:
            window_cpu = wait_steady(scratch, cell, armed, settings, progress, [c.proc.pid for c in children])
        shares = cpu.stop()
    except ChildError as exc:
        result.errors.append(str(exc))
    finally:
        stop_children(children, result, settings)
    if armed is not None:
        measure(result, scratch, armed, shares, window_cpu)
    return result


def measure(
    result: CellResult,
    scratch: Scratch,
    armed: Armed,
    shares: dict[str, float | None],
    window_cpu: float | None = None,
) -> None:
    cell = result.cell
    rows = scratch.run_rows(armed.t0)
    duplicates = scratch.duplicates()
    if cell.workload == "burst":
        metrics = burst_metrics(cell, armed.t0, rows, duplicates)
    else:
        metrics = steady_metrics(cell, armed.t0, rows, duplicates)
    metrics.update(node_metrics(result.nodes, metrics["fires"]))
    # A claim handed back without a run id means the history already held that fire.
    metrics["duplicates"] += metrics.get("claims_without_run", 0)
    add_cpu_shares(metrics, shares)
    if window_cpu is not None and metrics.get("fires"):
        # Steady and spread: the nodes' CPU while firing, per 1,000 fires of that window.
        metrics["window_cpu_s_per_1k_fires"] = window_cpu * 1000.0 / metrics["fires"]
    metrics["t0"] = armed.t0.isoformat()
    metrics["woken_late_ms"] = armed.woken_late_ms
    result.metrics = metrics
    error = nothing_fired(metrics)
    if error:
        result.errors.append(error)


def add_cpu_shares(metrics: dict[str, Any], shares: dict[str, float | None]) -> None:
    """The machine's CPU over the measured interval, and the database's CPU per 1,000 fires."""
    fires = metrics.get("fires") or 0
    db_s = shares.get("db_cpu_s")
    metrics["db_cpu_s_per_1k_fires"] = db_s * 1000.0 / fires if fires and db_s is not None else None
    metrics.update({k: v for k, v in shares.items() if k != "db_cpu_s"})


def summary(result: CellResult) -> str:
    """One line for the progress log."""
    m = result.metrics
    parts: list[str] = []
    if m.get("fires_per_s") is not None:
        parts.append(f"{m['fires_per_s']:,.0f} fires/s")
    if m.get("lag_p99_ms") is not None:
        parts.append(f"p99 lag {m['lag_p99_ms']:.0f} ms")
    if m:
        parts.append(f"{m.get('fires', 0):,}/{m.get('expected', 0):,} fired, {m.get('duplicates', 0)} dup")
    if result.errors:
        parts.append("FAILED: " + result.errors[0].splitlines()[0])
    return ", ".join(parts)


def names(children: Sequence[Child]) -> list[str]:
    return [c.name for c in children]
