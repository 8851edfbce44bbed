"""Drain a burst on one SQLite node inside this process and report CPU per fire, split by thread.

``tickwork bench`` measures nodes as separate processes against the raw loop; this runs the same
node (the bench's config, the bench's no-op job, 8 job threads) in-process, so that the engine
thread's own CPU time and the garbage collector's share can be read directly::

    python benchmarks/drain_in_process.py 60000
    python benchmarks/drain_in_process.py 60000 --import mymodule   # try a change first
    python benchmarks/drain_in_process.py 60000 --otel              # with an [otel] table
    python benchmarks/drain_in_process.py 60000 --block otel        # without the otel plugin

One JSON line: ``engine_us_per_fire`` is the CPU time of the thread running the loop (it is the
bottleneck of a SQLite node: a fire cannot go faster than this), ``process_us_per_fire`` adds the
job threads and the watchdog, ``gc_us_per_fire`` is the time the collector ran during the drain.
Timings drift with the machine: compare two versions by alternating runs (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import resource
import threading
import time
from dataclasses import replace
from typing import Any

from tickwork.node import Node, build_store
from tickwork.node.process import tune_gc
from tickwork.plugin.manager import plugin_manager_for
from tickwork_bench.cells import Cell
from tickwork_bench.nodeproc import build_config
from tickwork_bench.scratch import SQLiteScratch
from tickwork_bench.workloads import due_set_for

LEAD_S = 0.3


class GCTimer:
    """Time spent in collections while :attr:`on` (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.on = False
        self.seconds = 0.0
        self.collections = [0, 0, 0]
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if not self.on:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.collections[info["generation"]] += 1


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("schedules", type=int, help="schedules due at once")
    parser.add_argument("--claim", default="optimistic", help="SQLite claim strategy")
    parser.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE")
    parser.add_argument("--otel", action="store_true", help="an [otel] table (exporters: the OTEL_* variables)")
    parser.add_argument("--block", action="append", default=[], metavar="PLUGIN", help="[plugins] block")
    args = parser.parse_args()
    for module in args.imports:
        importlib.import_module(module)

    cell = Cell("sqlite", args.claim, "single", 1, "burst", args.schedules, args.schedules)
    scratch = SQLiteScratch()
    try:
        scratch.prepare(1)
        scratch.seed(args.schedules, args.schedules, due_set_for(cell))
        node_args = argparse.Namespace(
            node_id="n1",
            store="sqlite",
            store_options=json.dumps({**scratch.store_options(), "claim": args.claim, "batch_size": 100}),
            membership="single",
            membership_options="{}",
            workers=8,
            lookahead=0.0,
            end_batch_window=0.05,
            start_batch_window=0.015,
            steal_after=0.25,
            metrics=False,
            executor=None,
            executor_options="{}",
        )
        config = build_config(node_args)
        if args.otel:
            from tickwork_otel.settings import OtelConfig

            config = replace(config, plugin_tables={**config.plugin_tables, "otel": OtelConfig()})
        if args.block:
            config = replace(config, blocked_plugins=tuple(args.block))
        manager = plugin_manager_for(config)
        store = build_store(config, manager)
        store.open()
        node = Node(config, manager=manager, store=store)
        node.open()
        tune_gc()  # as `tickwork run` and the bench's node processes do
        engine = node.engine

        def stop_when_drained() -> None:
            while engine.finished < args.schedules:
                time.sleep(0.01)
            node.request_stop()

        collector = GCTimer()
        scratch.arm(LEAD_S, align=False)
        threading.Thread(target=stop_when_drained, daemon=True).start()
        collector.on = True
        cpu0, thread0, wall0 = cpu_seconds(), time.thread_time(), time.monotonic()
        engine.run_forever(time.monotonic() + 600)
        cpu1, thread1, wall1 = cpu_seconds(), time.thread_time(), time.monotonic()
        collector.on = False
        node.shutdown()
        fires = args.schedules
        wall = wall1 - wall0 - LEAD_S
        print(
            json.dumps(
                {
                    "schedules": fires,
                    "fired": engine.fired,
                    "duplicates": scratch.duplicates(),
                    "fires_per_s": round(fires / wall),
                    "engine_us_per_fire": round((thread1 - thread0) / fires * 1e6, 1),
                    "process_us_per_fire": round((cpu1 - cpu0) / fires * 1e6, 1),
                    "gc_us_per_fire": round(collector.seconds / fires * 1e6, 1),
                    "gc_collections": collector.collections,
                }
            )
        )
    finally:
        scratch.close()


if __name__ == "__main__":
    main()
