"""Example jobs: each prints a line when it fires, so you can watch the scheduler work."""

from __future__ import annotations

import asyncio
import random
import sys
from datetime import UTC, datetime

import tickwork


def _say(text: str) -> None:
    # One write of the whole line: print() writes the text and the newline separately, and two
    # jobs firing at the same moment then shared a line.
    sys.stdout.write(f"{datetime.now(UTC):%H:%M:%S.%f}"[:-3] + f"  {text}\n")
    sys.stdout.flush()


@tickwork.cron("*/5 * * * * *")  # 6 fields: seconds first -> every 5 seconds
def heartbeat() -> None:
    _say("demo.heartbeat: every 5 seconds (cron, 6 fields)")


@tickwork.calendar("*:*:00/15")  # systemd calendar event -> at :00, :15, :30, :45 of every minute
async def quarter_minute() -> None:
    await asyncio.sleep(0.1)
    _say("demo.quarter_minute: every 15 seconds (calendar, async)")


@tickwork.every("7s", timeout=2)
def flaky() -> None:
    if random.random() < 0.3:
        raise RuntimeError("simulated failure (recorded in the history)")
    _say("demo.flaky: every 7 seconds (interval); fails 30% of the time")


@tickwork.cron("* * * * *")
def every_minute() -> None:
    _say("demo.every_minute: at the start of every minute (cron, 5 fields)")
