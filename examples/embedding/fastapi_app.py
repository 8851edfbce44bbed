"""FastAPI (or any Starlette app): the node runs for the lifespan of the application.

Serve it with ``TICKWORK_CONFIG=tickwork.toml uvicorn examples.embedding.fastapi_app:app``.
Run a single uvicorn worker per node, or give each worker its own ``node_id`` (the default,
host name plus process id, already differs between workers).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request

import tickwork


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    async with tickwork.Node.from_config(jobs=["examples.embedding.jobs"]) as node:
        app.state.tickwork = node
        yield
    # Here the node has stopped: running jobs waited for (shutdown_grace), claims released.


app = FastAPI(lifespan=lifespan)


@app.post("/reports/{recipient}")
def schedule_report(recipient: str, request: Request) -> dict[str, Any]:
    # An Admin per request: it is not thread-safe, and FastAPI runs sync endpoints in a thread pool.
    with tickwork.connect(request.app.state.tickwork.config) as admin:
        info = admin.add(f"report-{recipient}", "1s", "examples.embedding.jobs:report", kind="interval",
                         args={"recipient": recipient})  # fmt: skip
    return {"name": info.name, "next_fire": info.next_fire}


@app.get("/runs/{schedule}")
def runs(schedule: str, request: Request) -> list[dict[str, Any]]:
    with tickwork.connect(request.app.state.tickwork.config) as admin:
        return [r.as_json() for r in admin.history(schedule=schedule)]


@app.get("/healthz")
def healthz(request: Request) -> dict[str, Any]:
    ok, reason = request.app.state.tickwork.health()
    return {"ok": ok, "reason": reason}
