"""What a harness run costs now that it goes through the local executor (thread pool and event
loop, as on a node) instead of a direct call in the test's thread.

Run: ``.venv/bin/python benchmarks/harness_runs.py [SECONDS]``

Declares a plain and an ``async def`` job firing every second, advances a
:class:`tickwork.testing.SchedulerHarness` on its in-memory store by ``SECONDS`` (default 1000)
fake seconds and prints the runs made, the wall time and the time per run.
"""

from __future__ import annotations

import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

JOBS = """
import tickwork


@tickwork.every("1s", name="bench.sync")
def plain() -> None:
    pass


@tickwork.every("1s", name="bench.async")
async def coroutine() -> None:
    pass
"""


def main(seconds: float) -> None:
    from tickwork.testing import SchedulerHarness

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "harness_bench_jobs.py").write_text(JOBS)
        sys.path.insert(0, folder)
        with SchedulerHarness(jobs=["harness_bench_jobs"], start=datetime(2026, 1, 1, tzinfo=UTC)) as harness:
            began = time.perf_counter()
            runs = harness.advance(seconds)
            took = time.perf_counter() - began
    print(f"{len(runs)} runs in {took:.2f} s: {took / len(runs) * 1e6:.0f} us per run")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 1000.0)
