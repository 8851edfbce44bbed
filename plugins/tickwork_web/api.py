"""The JSON API under ``/api`` (docs/web.md). Reads are open; the actions need
``Authorization: Bearer TOKEN``: 401 without it, 403 with a wrong one or when no token is
configured (read-only dashboard), 429 (with ``Retry-After``) after repeated wrong tokens from one
address. Errors are ``{"error": "..."}`` with 400, 404, 409 or 503."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import wraps
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tickwork.errors import DatabaseMissingError, ScheduleNotFoundError, StoreError, TickworkError

from . import data
from .actions import ACTIONS, perform
from .auth import clean_name
from .queries import MAX_LIMIT, BadQuery, api_schedule_filter, integer, run_filter, statuses

if TYPE_CHECKING:
    from .application import Dashboard

Handler = Callable[[Request], Awaitable[Response]]


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _dashboard(request: Request) -> Dashboard:
    from .application import dashboard_of

    return dashboard_of(request)


def errors_as_json(handler: Handler) -> Handler:
    """Map the admin API's errors to status codes, with the message as it is."""

    @wraps(handler)
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except BadQuery as exc:
            return error(400, str(exc))
        except ScheduleNotFoundError as exc:
            return error(404, str(exc))
        except (DatabaseMissingError, StoreError) as exc:
            return error(503, str(exc))
        except TickworkError as exc:  # e.g. "run now" on a disabled schedule
            return error(409, str(exc))

    return wrapped


@errors_as_json
async def schedules(request: Request) -> Response:
    params = request.query_params
    where = api_schedule_filter(params)
    limit = integer(params, "limit", 100, 1, MAX_LIMIT)
    offset = integer(params, "offset", 0, 0, 10**9)
    page = await _dashboard(request).read(lambda admin: data.schedule_page(admin, where, offset, limit))
    return JSONResponse(
        {
            "total": page.total,
            "offset": offset,
            "limit": limit,
            "schedules": [data.schedule_json(info) for info in page.schedules],
        }
    )


@errors_as_json
async def schedule(request: Request) -> Response:
    name = request.path_params["name"]
    wanted = statuses(request.query_params)
    detail = await _dashboard(request).read(lambda admin: data.schedule_detail(admin, name, wanted))
    return JSONResponse(data.detail_json(detail))


@errors_as_json
async def runs(request: Request) -> Response:
    where = run_filter(request.query_params)
    _, records = await _dashboard(request).read(lambda admin: data.runs(admin, where))
    return JSONResponse({"runs": [data.run_json(r) for r in records]})


@errors_as_json
async def nodes(request: Request) -> Response:
    _, rows, ttl = await _dashboard(request).read(data.node_rows)
    return JSONResponse({"node_ttl": ttl, "nodes": [data.node_json(row) for row in rows]})


def authorize(request: Request) -> Response | str:
    """The caller's description for the action log, or the 401/403 response."""
    guard = _dashboard(request).guard
    if not guard.enabled:
        return error(403, "actions are disabled: the dashboard has no token configured (read-only)")
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return error(
            401,
            "actions need a bearer token: Authorization: Bearer TOKEN",
            {"WWW-Authenticate": 'Bearer realm="tickwork"'},
        )
    throttle = _dashboard(request).throttle
    address = request.client.host if request.client else "-"
    wait = throttle.wait(address)
    if wait:
        return error(
            429, f"too many failed token checks from {address}: try again in {wait} s", {"Retry-After": str(wait)}
        )
    if not guard.token_matches(given.strip()):
        throttle.failed(address, "bearer token")
        return error(403, "the bearer token is not valid")
    throttle.succeeded(address)
    user = clean_name(request.headers.get("x-tickwork-user", ""))
    return f"{user} (API token)" if user else "API token"


async def _act(request: Request, action: str) -> Response:
    who = authorize(request)
    if isinstance(who, Response):
        return who
    name = request.path_params["name"]
    address = request.client.host if request.client else "-"
    info = await _dashboard(request).read(lambda admin: perform(admin, action, name, who, address))
    _dashboard(request).changed()
    return JSONResponse({"action": action, "schedule": data.schedule_json(info)})


@errors_as_json
async def act(request: Request) -> Response:
    action = request.path_params["action"]
    if action not in ACTIONS or action == "remove":
        return error(404, f"no such action {action!r}; actions: trigger, enable, disable (DELETE removes)")
    return await _act(request, action)


@errors_as_json
async def remove(request: Request) -> Response:
    return await _act(request, "remove")


async def not_found(request: Request) -> Response:
    return error(404, f"no API endpoint {request.url.path} (see docs/web.md)")
