"""Jobs of the overlap tests: each leaves lines in the file named by ``OVERLAP_FIRES`` (the
ground truth of what ran, and for how long), written with O_APPEND (one short line is atomic)."""

from __future__ import annotations

import asyncio
import os
import time

import tickwork

#: The asyncio job's cancellations seen in this process (an in-process executor test reads it).
cancelled: list[str] = []


def _line(text: str) -> None:
    fd = os.open(os.environ["OVERLAP_FIRES"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{text}\n".encode())
    os.close(fd)


def busy(seconds: float) -> None:
    """Works ``seconds``: a line when it starts and one when it ends (none if it is killed)."""
    run = tickwork.current_run()
    _line(f"start {run.schedule} {run.scheduled_for.isoformat()} {os.getpid()}")
    time.sleep(seconds)
    _line(f"end {run.schedule} {run.scheduled_for.isoformat()} {os.getpid()}")


async def busy_async(seconds: float) -> None:
    run = tickwork.current_run()
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        cancelled.append(run.scheduled_for.isoformat())
        raise
