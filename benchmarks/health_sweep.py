"""CPU seconds of one health sweep (``tickwork.node.healthwatch``) over many schedules: what the
sweeping node pays every ``[health] watch_interval``.

Run: ``.venv/bin/python benchmarks/health_sweep.py [--schedules 20000] [--store sqlite|postgres]
[--pg-url URL] [--repeat 5]``

Fills a scratch store with ``--schedules`` enabled schedules and no history (a bulk insert), makes
one untimed sweep (it records every schedule's first state), then times ``--repeat`` more sweeps,
each announcing nothing: the steady cost. Prints the median and the range of the sweeping
thread's CPU time (``time.thread_time``) and of the wall time. To compare two trees, run it from
each (``PYTHONPATH=<tree>/src:<tree>/plugins``), alternated. The test suite runs a tiny size.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from typing import cast

from scratchstores import add_store_arguments, fill_schedules, scratch_store
from tickwork.config import parse
from tickwork.node import Node
from tickwork.node.healthwatch import HealthWatch
from tickwork.sql.store import SQLStore


class SweepingNode:
    """What a :class:`HealthWatch` uses of its node: an id, a store, a configuration, and a
    membership in which it is the only live node (so it sweeps)."""

    def __init__(self, store: SQLStore) -> None:
        self.node_id = "bench"
        self.store = store
        self.config = parse({"health": {"watch_interval": 10}})

    def members(self) -> list[str]:
        return [self.node_id]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_store_arguments(parser)
    parser.set_defaults(schedules=20_000, repeat=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, scratch_store(parser, args, scratch) as (store, _):
        fill_schedules(store, args.schedules)
        watch = HealthWatch(cast(Node, SweepingNode(store)), lambda changes: None)
        watch.sweep()  # the first sight: every schedule's state recorded
        cpu, wall = [], []
        for _ in range(args.repeat):
            c0, w0 = time.thread_time(), time.perf_counter()
            changes = watch.sweep()
            cpu.append(time.thread_time() - c0)
            wall.append(time.perf_counter() - w0)
            if changes:
                raise SystemExit(f"a steady sweep announced {len(changes)} change(s): not a steady sweep")
    print(
        f"health sweep of {args.schedules:,} schedules on {args.store}, {args.repeat} sweeps: "
        f"CPU median {statistics.median(cpu):.3f} s [{min(cpu):.3f}-{max(cpu):.3f}], "
        f"wall median {statistics.median(wall):.3f} s [{min(wall):.3f}-{max(wall):.3f}]"
    )


if __name__ == "__main__":
    main()
