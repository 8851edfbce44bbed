"""The ``sync`` workload: how long K nodes take to start with N declared jobs, against the time
the module declaring them takes to import (issue #18: at most 3 x import + 3 s).

A cell writes a module declaring N yearly cron jobs (nothing fires while it is measured) and a
TOML config per node pointing at the scratch store, times ``python -c "import MODULE"`` in a fresh
process, then starts K ``tickwork run --for 0.01`` processes together, twice: on the empty store
(every schedule is created) and on the now unchanged one. A node's time is wall clock from its
process start to its exit, so it includes the interpreter, the imports, the sync and the stop.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from tickwork.sql.schema import schedules

from .cells import Cell
from .metrics import CellResult
from .progress import Progress
from .scratch import YEARLY, Scratch
from .workloads import Settings

MODULE = "tickwork_bench_syncjobs"
ROUNDS = ("empty", "unchanged")
RUN_FOR = "0.01"
#: Issue #18's target: node start <= IMPORT_FACTOR x import + TARGET_SLACK_S, in both rounds.
IMPORT_FACTOR = 3.0
TARGET_SLACK_S = 3.0
#: A round's nodes are killed after max(MIN_ROUND_S, N / SLOWEST_RATE) seconds; the row-by-row
#: sync the target was set against managed about 170 schedules/s on PostgreSQL.
MIN_ROUND_S = 120.0
SLOWEST_RATE = 50.0
SYNCED = re.compile(rf"synced {MODULE}: (\d+) created, (\d+) updated, (\d+) unchanged, (\d+) removed")


def schedule_name(i: int) -> str:
    return f"sync-{i:07d}"


def write_module(path: Path, count: int) -> None:
    """A module declaring ``count`` jobs that fire once a year: only the sync is exercised."""
    one = '@tickwork.cron("{cron}", name="{name}")\ndef job_{i}() -> None:\n    pass\n\n'
    body = "".join(one.format(cron=YEARLY, name=schedule_name(i), i=i) for i in range(count))
    path.write_text("import tickwork\n\n" + body)


def node_config(cell: Cell, scratch: Scratch, settings: Settings, node_id: str) -> str:
    """The TOML config of one node. Values are written as JSON, whose strings, numbers, booleans
    and arrays are valid TOML."""
    store = {"plugin": scratch.plugin, **scratch.store_options(), "claim": cell.claim}
    membership: dict[str, Any] = {"plugin": cell.membership}
    if cell.membership not in ("single", "all"):
        membership.update(settings.membership_options)
    lines = ["[scheduler]", f"jobs = {json.dumps([MODULE])}", f"node_id = {json.dumps(node_id)}", "", "[store]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in store.items()]
    lines += ["", "[membership]", *(f"{key} = {json.dumps(value)}" for key, value in membership.items())]
    if settings.metrics:
        lines += ["", "[metrics]", "port = 0"]
    return "\n".join(lines) + "\n"


def child_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    # Every node is given its --config; a config named by the environment must not be read instead.
    env.pop("TICKWORK_CONFIG", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(work), env.get("PYTHONPATH", "")) if p)
    return env


def time_import(work: Path, env: dict[str, str]) -> float:
    """Seconds to import the module in a fresh interpreter; the first, untimed run writes the .pyc
    that the nodes will load too.

    :raises subprocess.CalledProcessError: the import failed
    """
    command = [sys.executable, "-c", f"import {MODULE}"]
    subprocess.run(command, cwd=work, env=env, check=True, capture_output=True, text=True)
    started = time.perf_counter()
    subprocess.run(command, cwd=work, env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - started


@dataclass
class NodeRun:
    """One ``tickwork run`` process of a round, and what its sync reported (``None``: no log line)."""

    node_id: str
    round: str
    #: ``None`` when the node was killed at the round's deadline
    wall_s: float | None = None
    exit_code: int | None = None
    created: int | None = None
    updated: int | None = None
    unchanged: int | None = None
    removed: int | None = None
    log: str = ""


def round_timeout(cell: Cell) -> float:
    return max(MIN_ROUND_S, cell.schedules / SLOWEST_RATE)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _node_command(config: Path) -> list[str]:
    # INFO is `tickwork run`'s default level; it is given so that $TICKWORK_LOG_LEVEL cannot hide
    # the sync's log line.
    return [sys.executable, "-m", "tickwork", "--config", str(config), "--log-level", "INFO", "run", "--for", RUN_FOR]


def _kill_unfinished(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.returncode is None:
            proc.kill()
            proc.wait()


def _wait_all(procs: list[subprocess.Popen[bytes]], timeout: float) -> tuple[dict[int, float], list[int]]:
    """When each process exited (``perf_counter``), and which were killed at ``timeout``."""
    ended: dict[int, float] = {}

    def watch(i: int) -> None:
        # A blocking wait returns at the exit; Popen.wait(timeout=...) polls, up to 50 ms late.
        procs[i].wait()
        ended[i] = time.perf_counter()

    watchers = [threading.Thread(target=watch, args=(i,), daemon=True) for i in range(len(procs))]
    for watcher in watchers:
        watcher.start()
    deadline = time.monotonic() + timeout
    for watcher in watchers:
        watcher.join(max(0.0, deadline - time.monotonic()))
    late = [i for i, watcher in enumerate(watchers) if watcher.is_alive()]
    for i in late:
        procs[i].kill()
    for watcher in watchers:
        watcher.join()
    return ended, late


def start_round(
    work: Path, cell: Cell, scratch: Scratch, settings: Settings, name: str, env: dict[str, str]
) -> tuple[list[NodeRun], float]:
    """Start the cell's K nodes together and wait for them; returns each node's run and the CPU
    seconds they used together."""
    runs = [NodeRun(f"sync-{name}-{k}", name, log=str(work / f"sync-{name}-{k}.log")) for k in range(1, cell.nodes + 1)]
    commands = []
    for run in runs:
        config = work / f"{run.node_id}.toml"
        config.write_text(node_config(cell, scratch, settings, run.node_id))
        commands.append(_node_command(config))
    procs: list[subprocess.Popen[bytes]] = []
    started: list[float] = []
    cpu_before = _children_cpu()
    with contextlib.ExitStack() as stack:
        logs = [stack.enter_context(open(run.log, "wb")) for run in runs]
        stack.callback(_kill_unfinished, procs)
        # Everything a start needs is prepared above, so the K processes start within milliseconds.
        for command, log in zip(commands, logs, strict=True):
            started.append(time.perf_counter())
            procs.append(subprocess.Popen(command, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log))
        ended, late = _wait_all(procs, round_timeout(cell))
    cpu = _children_cpu() - cpu_before
    for i, (run, proc) in enumerate(zip(runs, procs, strict=True)):
        run.exit_code = proc.returncode
        run.wall_s = None if i in late else ended[i] - started[i]
        found = SYNCED.search(Path(run.log).read_text(errors="replace"))
        if found:
            run.created, run.updated, run.unchanged, run.removed = (int(g) for g in found.groups())
    return runs, cpu


def _tail(path: str, lines: int = 15) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def run_errors(runs: list[NodeRun], count: int, timeout: float) -> list[str]:
    """Nodes that failed, and on the unchanged store, a sync that found anything to write."""
    errors = []
    for run in runs:
        if run.wall_s is None:
            errors.append(f"{run.node_id} did not exit within {timeout:g}s; killed")
        elif run.exit_code != 0:
            errors.append(f"{run.node_id} exited with status {run.exit_code}\n{_tail(run.log)}")
        elif run.created is None:
            errors.append(f"{run.node_id} logged no 'synced {MODULE}' line\n{_tail(run.log)}")
        elif run.round == "unchanged" and (run.created, run.updated, run.removed, run.unchanged) != (0, 0, 0, count):
            errors.append(
                f"{run.node_id} found changes on the unchanged store: {run.created} created, {run.updated} updated, "
                f"{run.removed} removed, {run.unchanged} unchanged"
            )
    return errors


def stored_names(scratch: Scratch) -> Counter[str]:
    with scratch.engine.connect() as conn:
        return Counter(conn.scalars(select(schedules.c.name)).all())


def store_errors(names: Counter[str], count: int, name: str) -> list[str]:
    """Every declared schedule is in the store exactly once, and nothing else is."""
    expected = {schedule_name(i) for i in range(count)}
    missing = len(expected - names.keys())
    extra = len(names.keys() - expected)
    twice = sum(1 for n in names.values() if n > 1)
    if not (missing or extra or twice):
        return []
    return [
        f"after the {name} round the store holds {sum(names.values()):,} schedules, expected {count:,} "
        f"({missing:,} missing, {extra:,} not declared, {twice:,} names more than once)"
    ]


def sync_metrics(
    count: int, import_s: float, rounds: dict[str, list[NodeRun]], cpu: dict[str, float], names: Counter[str]
) -> dict[str, Any]:
    """The slowest node of each round against the import time and the target."""
    target = IMPORT_FACTOR * import_s + TARGET_SLACK_S
    metrics: dict[str, Any] = {"schedules": count, "import_s": import_s, "target_s": target}
    for name in ROUNDS:
        walls = [run.wall_s for run in rounds.get(name, [])]
        slowest = max(w for w in walls if w is not None) if walls and None not in walls else None
        metrics[f"start_{name}_s"] = slowest
        metrics[f"start_{name}_ratio"] = slowest / import_s if slowest is not None and import_s > 0 else None
        metrics[f"start_{name}_node_s"] = walls
        metrics[f"nodes_cpu_{name}_s"] = cpu.get(name)
    starts = [metrics["start_empty_s"], metrics["start_unchanged_s"]]
    metrics["met"] = None if None in starts else all(s <= target for s in starts)
    metrics["created_by_node"] = [run.created for run in rounds.get("empty", [])]
    metrics["stored"] = sum(names.values())
    return metrics


def run_sync_cell(index: int, cell: Cell, scratch: Scratch, settings: Settings, progress: Progress) -> CellResult:
    """Measure one sync cell; failures land in ``errors``, a missed target only in ``met``."""
    result = CellResult(cell)
    scratch.prepare(index)
    work = settings.work_dir / f"cell{index:03d}-sync"
    work.mkdir(parents=True, exist_ok=True)
    progress.update(0, 0, f"writing {cell.schedules:,} jobs")
    write_module(work / f"{MODULE}.py", cell.schedules)
    env = child_env(work)
    progress.update(0, 0, "timing the import")
    try:
        import_s = time_import(work, env)
    except subprocess.CalledProcessError as exc:
        tail = "\n".join(exc.stderr.splitlines()[-15:])
        result.errors.append(f"python -c 'import {MODULE}' exited with status {exc.returncode}\n{tail}")
        return result
    rounds: dict[str, list[NodeRun]] = {}
    cpu: dict[str, float] = {}
    names: Counter[str] = Counter()
    for name in ROUNDS:
        progress.update(0, 0, f"{cell.nodes} node(s) starting on the {name} store")
        rounds[name], cpu[name] = start_round(work, cell, scratch, settings, name, env)
        result.errors.extend(run_errors(rounds[name], cell.schedules, round_timeout(cell)))
        names = stored_names(scratch)
        result.errors.extend(store_errors(names, cell.schedules, name))
    result.nodes = [asdict(run) for runs in rounds.values() for run in runs]
    result.metrics = sync_metrics(cell.schedules, import_s, rounds, cpu, names)
    return result


def sync_summary(result: CellResult) -> str:
    """One line for the progress log."""
    m = result.metrics
    parts: list[str] = []
    if m.get("import_s") is not None:
        parts.append(f"import {m['import_s']:.2f} s")
    if m.get("start_empty_s") is not None and m.get("start_unchanged_s") is not None:
        verdict = "met" if m.get("met") else "missed"
        parts.append(
            f"start {m['start_empty_s']:.2f} s empty / {m['start_unchanged_s']:.2f} s unchanged "
            f"(target {m['target_s']:.2f} s: {verdict})"
        )
    if result.errors:
        parts.append("FAILED: " + result.errors[0].splitlines()[0])
    return ", ".join(parts)
