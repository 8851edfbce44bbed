"""Job functions the jobqueue tests enqueue; workers (often other processes) import them from here."""

from __future__ import annotations

import asyncio
import os
import time

#: Not callable: a target naming it must be rejected.
NOT_CALLABLE = 42


def append_line(path: str, text: str) -> None:
    """Append ``text`` and this process's id; one small O_APPEND write, so concurrent writers never interleave."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{text} {os.getpid()}\n".encode())
    finally:
        os.close(fd)


def slow_append(path: str, text: str, seconds: float) -> None:
    time.sleep(seconds)
    append_line(path, text)


def fail(message: str) -> None:
    raise RuntimeError(message)


async def async_append(path: str, text: str) -> None:
    await asyncio.sleep(0)
    append_line(path, text)
