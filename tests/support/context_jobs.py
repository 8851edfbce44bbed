"""Jobs that record the run they execute in; child processes (process mode) import them from here.

Each appends one JSON line to ``out``: what ``tickwork.current_run()`` returned and what the
parameter annotated ``tickwork.RunContext`` received.
"""

from __future__ import annotations

import asyncio
import json
import os

import tickwork

#: The declared job writes here (thread mode runs it in the test's own process).
DECLARED_OUT: list[str] = []


def _as_dict(ctx: tickwork.RunContext) -> dict[str, object]:
    return {
        "schedule": ctx.schedule,
        "scheduled_for": ctx.scheduled_for.isoformat(),
        "run_id": ctx.run_id,
        "attempt": ctx.attempt,
        "node_id": ctx.node_id,
    }


def _append(out: str, ctx: tickwork.RunContext, param: tickwork.RunContext | None) -> None:
    line = {"current": _as_dict(tickwork.current_run()), "param": None if param is None else _as_dict(param)}
    line["pid"] = os.getpid()
    assert ctx is tickwork.current_run() or ctx == tickwork.current_run()
    with open(out, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")


def record(out: str, run: tickwork.RunContext) -> None:
    _append(out, run, run)


def record_without_parameter(out: str) -> None:
    _append(out, tickwork.current_run(), None)


async def record_async(out: str, run: tickwork.RunContext) -> None:
    await asyncio.sleep(0)
    _append(out, run, run)


def fail_then_record(out: str, run: tickwork.RunContext) -> None:
    """Fails its first attempt, so that the retry's context says attempt 2."""
    _append(out, run, run)
    if run.attempt == 1:
        raise RuntimeError("first attempt fails on purpose")


def explode() -> None:
    raise ValueError("the job exploded on purpose")


@tickwork.every("1s", name="declared-with-context")
def declared_with_context(run: tickwork.RunContext) -> None:
    DECLARED_OUT.append(json.dumps(_as_dict(run)))


def noop() -> None:
    pass
