"""Jobs the health tests run: their behaviour follows files the test creates and removes, so
that a node (in this process or another) and the test agree without shared memory."""

from __future__ import annotations

import time
from pathlib import Path


def fails_while(flag: str) -> None:
    """Fail while ``flag`` exists; succeed once the test removes it."""
    if Path(flag).exists():
        raise RuntimeError(f"failing while {Path(flag).name} exists")


def slow_while(flag: str) -> None:
    """Return at once, or wait (up to a minute) while ``flag`` exists."""
    deadline = time.monotonic() + 60
    while Path(flag).exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def fine() -> None:
    return None
