"""Job functions for the local executor tests; child processes (process mode) import them from here."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time

#: Not callable: a target naming it must be rejected.
NOT_CALLABLE = 1

# Concurrency probe of the thread-pool test: how many gated() calls run at once, and the most ever.
_lock = threading.Lock()
active = 0
max_active = 0
gate = threading.Event()


def write_pid(path: str) -> None:
    with open(path, "w", encoding="ascii") as fh:
        fh.write(str(os.getpid()))


def write_pid_then_sleep(path: str, seconds: float = 60.0) -> None:
    write_pid(path)
    time.sleep(seconds)


def spawn_then_sleep(path: str) -> None:
    """Start a grandchild ``sleep`` process, write ``"<own pid> <grandchild pid>"``, then sleep."""
    grandchild = subprocess.Popen(["sleep", "60"])
    with open(path, "w", encoding="ascii") as fh:
        fh.write(f"{os.getpid()} {grandchild.pid}")
    time.sleep(60)


async def async_write_pid(path: str) -> None:
    await asyncio.sleep(0)
    write_pid(path)


def fail(message: str) -> None:
    raise ValueError(message)


def exit_abruptly() -> None:
    os._exit(3)


def needs(city: str, days: int = 1) -> None:
    """Has a required parameter, for argument checks."""


def sleep_for(seconds: float) -> None:
    time.sleep(seconds)


def gated() -> None:
    """Counts itself as active until the test opens ``gate``."""
    global active, max_active
    with _lock:
        active += 1
        max_active = max(max_active, active)
    try:
        gate.wait(10)
    finally:
        with _lock:
            active -= 1


def reset_probe() -> None:
    global active, max_active
    with _lock:
        active = 0
        max_active = 0
    gate.clear()
