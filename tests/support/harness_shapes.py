"""Every job shape the README and docs show, for tests/testing/test_harness_truth.py: run once on a real
node and once under the harness, each run appends what the job saw to ``$SHAPES_OUT``."""

from __future__ import annotations

import asyncio
import os
import time

import tickwork


def _seen(shape: str, detail: str) -> None:
    with open(os.environ["SHAPES_OUT"], "a", encoding="utf-8") as out:
        out.write(f"{shape} {detail}\n")


@tickwork.every("1s", name="shape.plain")
def plain() -> None:
    _seen("plain", "ran")


@tickwork.every("1s", name="shape.current_run")
def with_current_run() -> str:
    run = tickwork.current_run()
    _seen("current_run", f"attempt={run.attempt} same_second={run.scheduled_for.microsecond == 0}")
    return run.schedule


@tickwork.every("1s", name="shape.context")
def export(run: tickwork.RunContext) -> None:
    _seen("context", f"schedule={run.schedule} attempt={run.attempt}")


@tickwork.every("1s", name="shape.async")
async def morning_report() -> str:
    await asyncio.sleep(0)
    _seen("async", f"schedule={tickwork.current_run().schedule}")
    return "report"


@tickwork.every("1s", name="shape.async_context")
async def async_export(run: tickwork.RunContext) -> None:
    await asyncio.sleep(0)
    _seen("async_context", f"schedule={run.schedule}")


@tickwork.every("1s", name="shape.fails")
def fails() -> None:
    _seen("fails", "ran")
    raise ValueError("the export server said no")


@tickwork.every("1s", name="shape.async_fails")
async def async_fails() -> None:
    _seen("async_fails", "ran")
    raise KeyError("missing")


@tickwork.every("2s", name="shape.slow", timeout=0.3)
def slow() -> None:
    _seen("slow", "started")
    time.sleep(3)  # ten times its timeout: timed out however busy the machine is


@tickwork.every("2s", name="shape.async_slow", timeout=0.3)
async def async_slow() -> None:
    _seen("async_slow", "started")
    await asyncio.sleep(5)
    _seen("async_slow", "never")  # cancelled at its timeout on a node: never written
