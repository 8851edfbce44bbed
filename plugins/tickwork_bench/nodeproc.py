"""One benchmark node: ``python -m tickwork_bench.nodeproc --store ... --membership ...``.

Builds a real :class:`tickwork.node.Node` from a :class:`tickwork.config.Config`, prints
``{"event": "ready"}`` on stdout once it has joined, runs until SIGTERM/SIGINT, and prints one
``{"event": "result", ...}`` line with its counters. Everything counted is counted from the ready
line on, so start-up (imports, migrations check) is not charged to the fires.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import resource
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from types import FrameType
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine.interfaces import ExecuteStyle

from tickwork.abc import Store
from tickwork.config import Config, SchedulerConfig, parse
from tickwork.node import Node, build_store
from tickwork.node.process import tune_gc
from tickwork.plugin.manager import plugin_manager_for
from tickwork.sql.store import SQLStore
from tickwork.structures import Claim


@dataclass
class NodeResult:
    """What one benchmark node did and what it cost (fires, claims, SQL round trips, CPU, memory),
    counted from its ready line on: the ``result`` line it prints at exit (docs/benchmarks.md
    explains each field). Not the engine's own ``Counters``, which it reads at the end."""

    node_id: str = ""
    fired: int = 0
    finished: int = 0
    skipped: int = 0
    fenced_out: int = 0
    claim_calls: int = 0
    claims_empty: int = 0
    claims_short: int = 0
    claimed: int = 0
    asked: int = 0
    claims_without_run: int = 0
    db_calls: int = 0
    db_statements: int = 0
    commits: int = 0
    store_statements: int = 0
    cpu_seconds: float = 0.0
    maxrss_mb: float = 0.0
    wall_seconds: float = 0.0
    cpu_by_thread: dict[str, float] = field(default_factory=dict)


class Meter:
    """Counts claims (by wrapping ``claim_due``) and SQL round trips (engine events) of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.counters = NodeResult()
        self._lock = threading.Lock()
        self._store_statements_base = 0
        inner = store.claim_due

        def claim_due(node_id: str, *, limit: int, **given: Any) -> list[Claim]:
            # The arguments passed on as given: the engine passes next_due only where the store
            # takes it.
            claims = inner(node_id, limit=limit, **given)
            c = self.counters
            c.claim_calls += 1
            c.asked += limit
            c.claimed += len(claims)
            if not claims:
                c.claims_empty += 1
            elif len(claims) < limit:
                c.claims_short += 1
            c.claims_without_run += sum(1 for claim in claims if claim.run_id is None)
            return claims

        # The engine calls claim_due on the instance, so the wrapper sees every claim attempt.
        setattr(store, "claim_due", claim_due)  # noqa: B010 - assigning to a method mypy rejects
        if isinstance(store, SQLStore):
            engine = store.engine
            event.listen(engine, "before_cursor_execute", self._on_execute)
            event.listen(engine, "commit", self._on_commit)

    def _on_execute(
        self, _conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool
    ) -> None:
        n = statements_sent(cursor, statement, parameters, context, executemany)
        with self._lock:
            self.counters.db_calls += 1
            self.counters.db_statements += n

    def _on_commit(self, _conn: Any) -> None:
        with self._lock:
            self.counters.commits += 1

    def reset(self) -> None:
        """Start counting from now (after start-up)."""
        node_id = self.counters.node_id
        with self._lock:
            self.counters = NodeResult(node_id=node_id)
        self._store_statements_base = self.store.statements

    def store_statements(self) -> int:
        return self.store.statements - self._store_statements_base


def statements_sent(cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> int:
    """How many statements one ``before_cursor_execute`` sends: executemany sends one per parameter
    set (psycopg pipelines them: one round trip); SQLAlchemy's "insertmanyvalues" batches are
    single multi-row statements, and so is PyMySQL's executemany of an INSERT ... VALUES (it
    rewrites it as one multi-row INSERT)."""
    batched = getattr(context, "execute_style", None) is ExecuteStyle.INSERTMANYVALUES or (
        executemany and driver_batches(cursor, statement)
    )
    return len(parameters) if executemany and parameters and not batched else 1


def driver_batches(cursor: Any, statement: str) -> bool:
    """Whether the driver sends an executemany of ``statement`` as one multi-row statement:
    PyMySQL does for INSERT ... VALUES (up to its ``max_stmt_length`` per statement, 1 MB: a
    batch of the bench's run rows fits in one), and every other UPDATE or DELETE row by row."""
    if not type(cursor).__module__.startswith("pymysql"):
        return False
    from pymysql.cursors import RE_INSERT_VALUES

    return RE_INSERT_VALUES.match(statement) is not None


def cpu_by_thread() -> dict[str, float]:
    """CPU seconds per live thread name (pool threads grouped by prefix), from /proc via psutil."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is in the bench extra
        return {}
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = {}
    for t in psutil.Process().threads():
        name = names.get(t.id, "other")
        group = name.rsplit("_", 1)[0] if name.startswith("tickwork-job") else name
        out[group] = round(out.get(group, 0.0) + t.user_time + t.system_time, 3)
    return out


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def build_config(args: argparse.Namespace) -> Config:
    """The node's configuration, checked like a file's (the ``[metrics]`` table is the metrics
    plugin's, which declares it)."""
    data: dict[str, Any] = {
        "scheduler": {
            "node_id": args.node_id,
            "lookahead": args.lookahead,
            "end_batch_window": args.end_batch_window,
            "start_batch_window": args.start_batch_window,
            "steal_after": args.steal_after,
            "max_in_flight": args.max_in_flight,
        },
        "store": {"plugin": args.store, **json.loads(args.store_options)},
        "membership": {"plugin": args.membership, **json.loads(args.membership_options)},
        "executor": {"local": {"max_workers": args.workers}},
    }
    if args.executor is not None:
        # A hand-off executor (tickwork bench --workload handoff): its [executor.NAME] table.
        data["executor"][args.executor] = json.loads(args.executor_options)
    if args.metrics:
        data["metrics"] = {"port": 0}
    return parse(data)


def emit(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def run_node(args: argparse.Namespace) -> NodeResult:
    config = build_config(args)
    manager = plugin_manager_for(config)
    store = build_store(config, manager)
    store.open()
    meter = Meter(store)
    meter.counters.node_id = args.node_id
    node = Node(config, manager=manager, store=store)

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        node.request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    node.open()
    tune_gc()  # as `tickwork run` does: the process is the node's own
    meter.reset()
    cpu0 = cpu_seconds()
    wall0 = time.monotonic()
    threads0 = cpu_by_thread()
    emit({"event": "ready", "node_id": args.node_id})
    try:
        node.engine.run_forever(time.monotonic() + args.max_seconds)
        # Pool threads end at shutdown: read their CPU first.
        threads = cpu_by_thread()
    finally:
        node.shutdown()
    counters = meter.counters
    counters.cpu_by_thread = {k: round(v - threads0.get(k, 0.0), 3) for k, v in threads.items()}
    counters.cpu_seconds = cpu_seconds() - cpu0
    counters.wall_seconds = time.monotonic() - wall0
    counters.maxrss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    counters.store_statements = meter.store_statements()
    engine = node.engine
    counters.fired, counters.finished = engine.fired, engine.finished
    counters.skipped, counters.fenced_out = engine.skipped, engine.fenced_out
    return counters


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tickwork_bench.nodeproc", description=__doc__.splitlines()[0])
    p.add_argument("--node-id", required=True)
    p.add_argument("--store", required=True, help="store plugin name")
    p.add_argument("--store-options", default="{}", help="JSON object: the [store] table")
    p.add_argument("--membership", required=True, help="membership plugin name")
    p.add_argument("--membership-options", default="{}", help="JSON object: the [membership] table")
    p.add_argument("--workers", type=int, default=8, help="local executor threads")
    p.add_argument("--executor", help="configure this executor too (besides local)")
    p.add_argument("--executor-options", default="{}", help="JSON object: the [executor.NAME] table of --executor")
    p.add_argument(
        "--lookahead", type=float, default=SchedulerConfig.lookahead.default, help="[scheduler] lookahead seconds"
    )
    p.add_argument(
        "--end-batch-window",
        type=float,
        default=SchedulerConfig.end_batch_window.default,
        help="[scheduler] end_batch_window seconds",
    )
    p.add_argument(
        "--start-batch-window",
        type=float,
        default=SchedulerConfig.start_batch_window.default,
        help="[scheduler] start_batch_window seconds",
    )
    p.add_argument(
        "--steal-after", type=float, default=SchedulerConfig.steal_after.default, help="[scheduler] steal_after seconds"
    )
    p.add_argument(
        "--max-in-flight",
        type=int,
        default=SchedulerConfig.max_in_flight.default,
        help="[scheduler] max_in_flight",
    )
    p.add_argument("--max-seconds", type=float, default=600.0, help="stop on its own after this long")
    p.add_argument("--log-level", default="WARNING")
    p.add_argument("--metrics", action="store_true", help="serve /metrics on a free port (the metrics plugin)")
    p.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE before building the node (to try a change to the engine or a store)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # Per-run INFO lines would cost more than the no-op job itself.
    logging.basicConfig(
        level=args.log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for module in args.imports:
        importlib.import_module(module)
    counters = run_node(args)
    emit({"event": "result", **asdict(counters)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
