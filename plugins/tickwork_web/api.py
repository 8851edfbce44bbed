"""The JSON API under ``/api`` (docs/web.md). Reads are open unless ``[web] public_reads = false``;
the actions, creating and changing schedules need ``Authorization: Bearer TOKEN`` of a role that
allows them: 401 without it, 403 with a wrong one, a lesser role, a schedule outside the token's
namespaces, or when no token exists (read-only dashboard), 429 (with ``Retry-After``) after
repeated wrong tokens from one address (:mod:`.access` finds the caller). Errors are
``{"error": "..."}`` with 400, 403, 404, 409, 413 or 503."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tickwork.admin import Admin
from tickwork.admin.info import ScheduleInfo
from tickwork.admin.roles import may_act_on, namespace_in
from tickwork.errors import (
    ConfigError,
    DatabaseMissingError,
    DeclarationError,
    ExecutorError,
    ScheduleExistsError,
    ScheduleNotFoundError,
    StoreError,
    TickworkError,
    TriggerError,
)
from tickwork.structures import ALL_NAMESPACES

from . import data
from .access import Caller, Forbidden, access_of, check_scope, scoped
from .actions import DECLARED, FORM_ACTIONS, ONE_ACTIONS, audit, perform, perform_form
from .limits import deep_message, too_deep
from .namespaces import request_namespace
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
        except Forbidden as exc:
            return error(403, str(exc))
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
    page = await _dashboard(request).read(lambda admin: data.schedule_page(admin, where, offset, limit), request)
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
    caller = access_of(request).caller

    def work(admin: Admin) -> data.ScheduleDetail:
        check_scope(caller, [admin.get(name)])
        return data.schedule_detail(admin, name, wanted)

    detail = await _dashboard(request).read(work, request)
    return JSONResponse(data.detail_json(detail))


@errors_as_json
async def runs(request: Request) -> Response:
    where = run_filter(request.query_params)
    # The admin reads only the namespace the caller may read (Dashboard.read): no other check.
    _, records = await _dashboard(request).read(lambda admin: data.runs(admin, where), request)
    return JSONResponse({"runs": [data.run_json(r) for r in records]})


@errors_as_json
async def nodes(request: Request) -> Response:
    _, rows, ttl = await _dashboard(request).read(data.node_rows, request)
    return JSONResponse({"node_ttl": ttl, "nodes": [data.node_json(row) for row in rows]})


def authorize(request: Request, action: str) -> Response | Caller:
    """The caller, if its role allows ``action``; else the 401/403 response. The token itself was
    checked by :class:`.access.Identify`."""
    access = access_of(request)
    if access.caller is None:
        if not access.actions_enabled:
            return error(403, "actions are disabled: the dashboard has no token configured (read-only)")
        return error(
            401,
            "actions need a bearer token: Authorization: Bearer TOKEN",
            {"WWW-Authenticate": 'Bearer realm="tickwork"'},
        )
    try:
        access.caller.require(action)
    except Forbidden as exc:
        audit(action, request.path_params.get("name", "-"), access.caller.who, _address(request), refused=str(exc))
        return error(403, str(exc))
    return access.caller


def _address(request: Request) -> str:
    return request.client.host if request.client else "-"


async def _act(request: Request, action: str) -> Response:
    caller = authorize(request, action)
    if isinstance(caller, Response):
        return caller
    name = request.path_params["name"]
    address = _address(request)

    def work(admin: Admin) -> ScheduleInfo:
        scoped(caller, action, address, admin, name)
        return perform(admin, action, name, caller.who, address)

    info = await _dashboard(request).read(work, request)
    _dashboard(request).changed()
    return JSONResponse({"action": action, "schedule": data.schedule_json(info)})


@errors_as_json
async def act(request: Request) -> Response:
    action = request.path_params["action"]
    if action in FORM_ACTIONS:
        return await _form_act(request, action)
    if action not in ONE_ACTIONS or action == "remove":
        known = ", ".join((*(a for a in ONE_ACTIONS if a != "remove"), *FORM_ACTIONS))
        return error(404, f"no such action {action!r}; actions: {known} (DELETE removes)")
    return await _act(request, action)


async def _form_act(request: Request, action: str) -> Response:
    """``POST /api/schedules/NAME/pause|resume|backfill|rerun`` with a JSON object of the
    action's fields (``note``, ``until``; ``from``, ``to``, ``rerun``; ``run``), as the
    dashboard's forms send them: the admin API's calls, audited like every action."""
    caller = authorize(request, action)
    if isinstance(caller, Response):
        return caller
    try:
        body = await _json_object(request) if await request.body() else {}
    except BadBody as exc:
        return error(exc.status, str(exc))
    name = request.path_params["name"]
    address = _address(request)

    def work(admin: Admin) -> tuple[ScheduleInfo, str]:
        scoped(caller, action, address, admin, name)
        return perform_form(admin, action, name, body, caller.who, address)

    try:
        info, said = await _dashboard(request).read(work, request)
    except INVALID as exc:
        return error(400, str(exc))
    _dashboard(request).changed()
    return JSONResponse({"action": action, "done": said, "schedule": data.schedule_json(info)})


@errors_as_json
async def remove(request: Request) -> Response:
    return await _act(request, "remove")


#: The largest JSON body a schedule may be sent in (a schedule is a few hundred bytes; its
#: arguments are the only part that can grow).
MAX_BODY = 64 * 1024
#: The largest body of ``/api/plan`` and ``/api/apply``: a whole set of schedules (about 10,000
#: of a few hundred bytes each).
MAX_APPLY_BODY = 4 * 1024 * 1024
#: The paths that take a set of schedules.
APPLY_PATHS = ("/api/plan", "/api/apply")
#: What a schedule's definition may fail on: the request's fault (400), named in the message.
INVALID = (ConfigError, TriggerError, DeclarationError, ExecutorError, TypeError, ValueError)


class BadBody(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def _json_object(request: Request) -> dict[str, Any]:
    """The request's body: one JSON object nested at most :data:`~.limits.MAX_DEPTH` levels. Its
    size, at most :data:`MAX_BODY` bytes, is the application's :class:`~.limits.BodyLimit`'s to
    refuse (413, before this reads anything)."""
    raw = await request.body()
    try:
        # Decoded as json.loads decodes bytes (UTF-8, -16 or -32), so the depth is scanned in
        # the very text that is parsed.
        text = raw.decode(json.detect_encoding(raw), "surrogatepass")
        if too_deep(text):
            raise BadBody(400, f"the body is {deep_message()}")
        value = json.loads(text)
    except ValueError as exc:  # also a number of over 4,300 digits, which int() refuses
        raise BadBody(400, f"the body is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadBody(400, f"the body must be a JSON object of the schedule's fields, got {type(value).__name__}")
    return value


def _written(admin: Admin, action: str, name: str, who: str, address: str, write: Callable[[], ScheduleInfo]) -> Any:
    """``write()`` audited as ``action`` on ``name``: the schedule written, or the error response."""
    try:
        info = write()
    except ScheduleExistsError as exc:
        audit(action, name, who, address, refused=str(exc))
        return error(409, str(exc))
    except INVALID as exc:
        audit(action, name, who, address, refused=str(exc))
        return error(400, str(exc))
    audit(action, info.name, who, address)
    return info


#: Keyword arguments of the admin API's writes that are not a schedule's fields: the API does not
#: let a caller replace a schedule through a create, skip the live nodes' executor check or name
#: another author for the version it writes (``by`` is the token's or session's name).
NOT_FIELDS = ("replace", "check_nodes", "by")


async def _write(
    request: Request, action: str, status: int, work: Callable[[Admin, dict[str, Any], Caller, str], Any]
) -> Response:
    caller = authorize(request, action)
    if isinstance(caller, Response):
        return caller
    try:
        body = await _json_object(request)
    except BadBody as exc:
        return error(exc.status, str(exc))
    refused = [key for key in NOT_FIELDS if key in body]
    if refused:
        return error(400, f"{', '.join(refused)}: not a schedule field")
    address = _address(request)
    found = await _dashboard(request).read(lambda admin: work(admin, body, caller, address), request)
    if isinstance(found, Response):
        return found
    _dashboard(request).changed()
    return JSONResponse({"action": action, "schedule": data.schedule_json(found)}, status_code=status)


@errors_as_json
async def create(request: Request) -> Response:
    """``POST /api/schedules``: ``{"name", "expression", "target", ...options}``, as
    :meth:`Admin.add <tickwork.admin.Admin.add>` takes them (durations as ``"90s"``, times as
    ISO 8601); 201 with the schedule."""

    def work(admin: Admin, body: dict[str, Any], caller: Caller, address: str) -> Any:
        who = caller.who
        missing = [key for key in ("name", "expression", "target") if not isinstance(body.get(key), str)]
        if missing:
            return error(400, f"{', '.join(missing)}: required, as text")
        if not may_act_on(caller.token, namespace_in(body)):
            refused = f"{caller.described} may not create schedules in namespace {namespace_in(body)!r}"
            audit("create", str(body["name"]), who, address, refused=refused)
            return error(403, refused)
        fields = dict(body)
        name, expression, target = fields.pop("name"), fields.pop("expression"), fields.pop("target")
        return _written(
            admin, "create", name, who, address, lambda: admin.add(name, expression, target, by=who, **fields)
        )

    return await _write(request, "create", 201, work)


@errors_as_json
async def update(request: Request) -> Response:
    """``PATCH /api/schedules/{name}``: the fields to change (any of ``expression``, ``target``
    and the options), as :meth:`Admin.update <tickwork.admin.Admin.update>` takes them; the others
    are kept. A schedule declared in code is refused (409): its declaration is put back at the
    next node start."""
    name = request.path_params["name"]

    def work(admin: Admin, body: dict[str, Any], caller: Caller, address: str) -> Any:
        who = caller.who
        scoped(caller, "edit", address, admin, name)  # 404 for an unknown name
        module = admin.get(name).module
        if module is not None:
            refused = DECLARED.format(name=name, module=module)
            audit("edit", name, who, address, refused=refused)
            return error(409, refused)
        if "name" in body and body["name"] != name:
            return error(400, "name: a schedule cannot be renamed; create the new one and remove this one")
        fields = {key: value for key, value in body.items() if key != "name"}
        return _written(admin, "edit", name, who, address, lambda: admin.update(name, by=who, **fields))

    return await _write(request, "edit", 200, work)


async def _applying(request: Request, applied: bool) -> Response:
    """``POST /api/plan`` and ``POST /api/apply``: ``{"schedules": [...], "prune": false}``, each
    schedule the fields of ``POST /api/schedules``; the plan as ``tickwork apply --plan --json``
    prints it. Both need the token: validating a schedule imports its target's module."""
    action = "apply" if applied else "plan"
    caller = authorize(request, action)
    if isinstance(caller, Response):
        return caller
    who = caller.who
    address = _address(request)
    # An apply works on one namespace (?namespace=NAME, else "default"): a token not scoped to it
    # may not touch it.
    namespace = request_namespace(request)
    if namespace == ALL_NAMESPACES:
        return error(400, "namespace: an apply works on one namespace, not every one")
    if not may_act_on(caller.token, namespace):
        refused = f"{caller.described} may not {action} schedules in namespace {namespace!r}"
        audit(action, "*", who, address, refused=refused)
        return error(403, refused)
    try:
        body = await _json_object(request)
    except BadBody as exc:
        return error(exc.status, str(exc))
    entries, prune = body.get("schedules"), body.get("prune", False)
    unknown = sorted(set(body) - {"schedules", "prune"})
    if unknown:
        return error(400, f'{", ".join(unknown)}: unknown; the body is {{"schedules": [...], "prune": false}}')
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return error(400, "schedules: required, a list of objects (the fields of POST /api/schedules)")
    if not isinstance(prune, bool):
        return error(400, "prune: true or false")
    not_fields = sorted({key for e in entries for key in NOT_FIELDS if key in e})
    if not_fields:
        return error(400, f"{', '.join(not_fields)}: not a schedule field")

    def work(admin: Admin) -> Any:
        try:
            if applied:
                return admin.apply(entries, prune=prune, namespace=namespace, by=who)
            return admin.plan(entries, prune=prune, namespace=namespace)
        except INVALID as exc:
            audit(action, "*", who, address, refused=str(exc))
            return error(400, str(exc))

    found = await _dashboard(request).read(work, request)
    if isinstance(found, Response):
        return found
    if applied:
        audit(action, "*", who, address, note=json.dumps(found.counts(), sort_keys=True))
        _dashboard(request).changed()
    return JSONResponse({**found.as_json(), "applied": applied})


@errors_as_json
async def plan(request: Request) -> Response:
    return await _applying(request, applied=False)


@errors_as_json
async def apply(request: Request) -> Response:
    return await _applying(request, applied=True)


async def not_found(request: Request) -> Response:
    return error(404, f"no API endpoint {request.url.path} (see docs/web.md)")
