"""Running a script of ``benchmarks/`` at a tiny size, as the tests that keep the benchmarks
working do: the interpreter running the tests, the checkout importable, the output captured."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.paths import REPO


def run_benchmark(script: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``benchmarks/<script>`` with ``args`` and return what it did (not checked: the test
    asserts on the exit status and the output)."""
    return subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), *args],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
