"""CPU per run of the local executor's thread path alone: ``submit`` → a no-op job in the pool →
``on_done``, in batches of 100 like a node's claims, without a store or an engine::

    python benchmarks/local_executor_path.py            # 100,000 runs, three repetitions
    python benchmarks/local_executor_path.py 300000 --repeat 5

Prints the process CPU and wall time per run of each repetition. A node pays this for every fire
on top of its claim and end writes (docs/benchmarks.md, "SQLite bursts: the local executor's
share"). Compare two versions by alternating runs: timings drift with the machine.
"""

from __future__ import annotations

import argparse
import queue
import resource
import time
from datetime import UTC, datetime

from tickwork.structures import JobCall, Outcome
from tickwork_local.executor import LocalExecutor

BATCH = 100


def noop() -> None:
    """The job: nothing, so that what is measured is the path around it."""


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=int, nargs="?", default=100_000, help="runs per repetition")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument("--workers", type=int, default=8, help="pool threads (default 8, a node's default)")
    args = parser.parse_args()
    if args.runs < BATCH or args.repeat < 1:
        parser.error(f"runs must be at least {BATCH} and --repeat at least 1")

    target = "__main__:noop"  # this script, as the executor imports targets
    executor = LocalExecutor(max_workers=args.workers)
    executor.start()
    now = datetime.now(UTC)
    calls = [
        JobCall(run_id=i, schedule=f"s{i}", scheduled_for=now, target=target, arguments={}, timeout=300.0)
        for i in range(args.runs)
    ]
    done: queue.SimpleQueue[Outcome] = queue.SimpleQueue()
    try:
        for _ in range(args.repeat):
            cpu0, wall0 = cpu_seconds(), time.perf_counter()
            for start in range(0, len(calls), BATCH):
                batch = calls[start : start + BATCH]
                for call in batch:
                    executor.submit(call, done.put)
                for _call in batch:
                    done.get()
            cpu, wall = cpu_seconds() - cpu0, time.perf_counter() - wall0
            print(f"{cpu / len(calls) * 1e6:.2f} µs CPU, {wall / len(calls) * 1e6:.2f} µs wall per run")
    finally:
        executor.shutdown()


if __name__ == "__main__":
    main()
