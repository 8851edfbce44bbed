"""Job functions the engine tests run through the real local executor."""

from __future__ import annotations

import asyncio
import threading
import time

calls: list[str] = []
gate = threading.Event()


def record() -> None:
    calls.append("record")


def with_args(city: str, days: int = 1) -> None:
    calls.append(f"{city}:{days}")


def boom() -> None:
    raise ValueError("the job failed on purpose")


def blocked() -> None:
    gate.wait(10)
    calls.append("blocked")


def sleepy() -> None:
    time.sleep(1.0)


async def async_record() -> None:
    await asyncio.sleep(0)
    calls.append("async")


async def async_forever() -> None:
    await asyncio.sleep(3600)


attempts: list[int] = []


def fails_twice() -> None:
    attempts.append(len(attempts) + 1)
    if len(attempts) <= 2:
        raise RuntimeError(f"attempt {len(attempts)} fails")


def record_attempt() -> None:
    """Records which fire and attempt it runs (tickwork.current_run())."""
    import tickwork

    run = tickwork.current_run()
    calls.append(f"{run.scheduled_for.isoformat()} attempt {run.attempt}")
