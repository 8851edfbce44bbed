"""Jobs of the backfill overlap tests: ``stepped`` runs until the test lets one run end."""

from __future__ import annotations

import threading

import tickwork

#: One release per run allowed to end (the test ends runs one at a time).
steps = threading.Semaphore(0)
#: The fire times of the runs that started, in the order they started.
started: list[str] = []


def stepped() -> None:
    started.append(tickwork.current_run().scheduled_for.isoformat())
    if not steps.acquire(timeout=10):
        raise TimeoutError("the test never let this run end")
