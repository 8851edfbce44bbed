"""``tickwork check`` as a probe runs it: a process of its own, read by its exit status and its
lines (``STATE NAME: REASON`` per schedule listed, then the counts)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO

WAIT_S = 60  # guard against a hung command; not a timing assertion


def check(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``tickwork check -c CONFIG ARGS...`` in a process of its own."""
    # The repository first, then what the caller had (a worktree's src/ and plugins/, say).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "tickwork", "check", "-c", str(config), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=WAIT_S,
        check=False,
    )


def lines_of(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """The listed schedules' ``STATE NAME: REASON`` lines, name -> state (the counts line left out)."""
    out = {}
    for line in result.stdout.splitlines()[:-1]:
        state, rest = line.split(" ", 1)
        out[rest.split(":", 1)[0]] = state
    return out


def counts_of(result: subprocess.CompletedProcess[str]) -> str:
    """The last line: ``N schedules: H healthy, U unhealthy, P paused, D disabled ...``."""
    return result.stdout.splitlines()[-1]
