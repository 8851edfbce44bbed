"""The HTML pages. A page asked with ``?fragment=1`` returns only its live part, which the page's
script fetches every few seconds to refresh itself (static/tickwork.js)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from tickwork.errors import DatabaseMissingError, ScheduleNotFoundError, StoreError, TickworkError
from tickwork.structures import ALL_NAMESPACES, RunStatus

from . import data
from .access import Caller, Forbidden, access_of, check_scope, scoped
from .actions import FORM_ACTIONS, ONE_ACTIONS, perform, perform_form
from .auth import COOKIE, SESSION_SECONDS
from .limits import capped
from .namespaces import in_namespace, request_namespace
from .queries import PAGE_SIZES, BadQuery, integer, run_filter, schedule_filter, statuses
from .summary import MOST

if TYPE_CHECKING:
    from .application import Dashboard

log = logging.getLogger("tickwork.web.actions")

#: Seconds between refreshes of a page's live part.
REFRESH_SECONDS = 3
DONE = {
    "trigger": "Run requested: the schedule is due now, and a live node starts it.",
    "enable": "Schedule enabled.",
    "disable": "Schedule disabled.",
    "remove": "Schedule removed.",
    "release": "Stuck hand-off released: the next fire is handed off again.",
    "create": "Schedule created.",
    "edit": "Schedule saved.",
    "pause": "Schedule paused: it fires no more until resumed or its pause ends.",
    "resume": "Schedule resumed: its next fire is computed from now.",
    "backfill": "Backfill queued: a node owning the schedule runs the fire times, oldest first.",
    "rerun": "The failed fire is queued to run again as its next attempt.",
    "login": "Logged in: actions are available.",
    "logout": "Logged out.",
}


def done_message(params: Any) -> str | None:
    """The flash line after an action (``?done=``; for a selection also ``action`` and ``n``)."""
    done = params.get("done", "")
    if done != "selection":
        return DONE.get(done)
    verbs = {"trigger": "Run requested", "enable": "Enabled", "disable": "Disabled", "remove": "Removed"}
    action, count = params.get("action"), params.get("n", "")
    if action not in verbs or not count.isdigit():
        return None
    return f"{verbs[action]}: {count} schedule{'' if count == '1' else 's'}."


def _dashboard(request: Request) -> Dashboard:
    from .application import dashboard_of

    return dashboard_of(request)


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """``template`` with the caller's rights: ``session`` (logged in), ``can_operate`` (the
    operator's buttons: run, enable, disable, pause, resume, backfill, release, run again) and
    ``can_admin`` (new, edit, remove)."""
    board = _dashboard(request)
    access = access_of(request)
    caller = access.caller if access.caller is not None and access.caller.session is not None else None
    fragment = request.query_params.get("fragment") == "1"
    page = board.templates.get_template(template)
    html = page.render(
        request=request,
        root=request.scope.get("root_path", ""),
        actions_enabled=access.actions_enabled,
        session=caller.session if caller else None,
        can_operate=caller is not None and caller.may("trigger"),
        can_admin=caller is not None and caller.may("edit"),
        role=caller.role.value if caller else "",
        csrf=access.csrf(board),
        done=done_message(request.query_params),
        refresh=REFRESH_SECONDS,
        fragment=fragment,
        namespace=_shown_namespace(request),
        **context,
    )
    return HTMLResponse(html, status_code=status)


def _shown_namespace(request: Request) -> str:
    """The namespace a page is about, as its links carry it (every one when the asked one is bad:
    the page then says why)."""
    try:
        return request_namespace(request)
    except BadQuery:
        return ALL_NAMESPACES


def problem(request: Request, status: int, message: str) -> HTMLResponse:
    return render(request, "error.html", status=status, status_code=status, message=message)


async def _guarded(request: Request, template: str, load: Any, **context: Any) -> Response:
    """Render ``template`` with what ``load(admin)`` returns (a dict), or an error page."""
    try:
        found = await _dashboard(request).read(load, request)
    except BadQuery as exc:
        return problem(request, 400, str(exc))
    except Forbidden as exc:
        return problem(request, 403, str(exc))
    except ScheduleNotFoundError as exc:
        return problem(request, 404, str(exc))
    except (DatabaseMissingError, StoreError) as exc:
        return problem(request, 503, str(exc))
    return render(request, template, **context, **found)


async def schedules(request: Request) -> Response:
    params = request.query_params
    try:
        where, show = schedule_filter(params)
        size = integer(params, "per_page", 50, 1, max(PAGE_SIZES))
        number = integer(params, "page", 1, 1, 10**7)
    except BadQuery as exc:
        return problem(request, 400, str(exc))
    offset = (number - 1) * size

    kept = _dashboard(request).strip

    def load(admin: Any) -> dict[str, Any]:
        page = data.schedules_with_summary(admin, where, offset, size, kept)
        return {
            "now": page.now,
            "total": page.total,
            "schedules": page.schedules,
            "strip": page.summary,
            "most": MOST,
        }

    keep = {k: v for k, v in {"q": where.search, "state": params.get("state"), "show": show}.items() if v}
    if size != 50:
        keep["per_page"] = str(size)
    return await _guarded(
        request,
        "schedules.html",
        load,
        where=where,
        show=show,
        page=number,
        per_page=size,
        page_sizes=PAGE_SIZES,
        query=lambda **extra: urlencode({**keep, **{k: str(v) for k, v in extra.items()}}),
    )


async def schedule(request: Request) -> Response:
    name = request.path_params["name"]
    try:
        wanted = statuses(request.query_params)
    except BadQuery as exc:
        return problem(request, 400, str(exc))

    caller = access_of(request).caller

    def load(admin: Any) -> dict[str, Any]:
        check_scope(caller, [admin.get(name)])
        return {"d": data.schedule_detail(admin, name, wanted)}

    return await _guarded(
        request, "schedule.html", load, status_filter=",".join(s.value for s in wanted), statuses=RunStatus
    )


async def runs(request: Request) -> Response:
    try:
        where = run_filter(request.query_params)
    except BadQuery as exc:
        return problem(request, 400, str(exc))

    overall = _dashboard(request).overall

    def load(admin: Any) -> dict[str, Any]:
        now, records = data.runs(admin, where)
        return {"now": now, "records": records, "overall": overall.get(lambda: data.overall_chart(admin, now))}

    return await _guarded(request, "runs.html", load, where=where, statuses=RunStatus)


async def nodes(request: Request) -> Response:
    def load(admin: Any) -> dict[str, Any]:
        now, rows, ttl = data.node_rows(admin)
        return {"now": now, "rows": rows, "ttl": ttl, "ring": data.ownership(admin, rows)}

    return await _guarded(request, "nodes.html", load)


# -- login and actions ----------------------------------------------------------------------------


async def login_form(request: Request) -> Response:
    return render(request, "login.html", failed=False)


def redirect(request: Request, path: str, done: str) -> RedirectResponse:
    root = request.scope.get("root_path", "")
    joiner = "&" if "?" in path else "?"
    return RedirectResponse(f"{root}{path}{joiner}done={done}", status_code=303)


async def login(request: Request) -> Response:
    board = _dashboard(request)
    guard = board.guard
    if not access_of(request).actions_enabled:
        return problem(request, 403, "actions are disabled: the dashboard has no token configured (read-only)")
    throttle = board.throttle
    address = request.client.host if request.client else "-"
    wait = throttle.wait(address)
    if wait:
        # Refused before the form is even read: a guesser gets no answer about its guess.
        refused = problem(
            request, 429, f"Too many failed logins from {address}: try again in {wait} s (each failure doubles it)"
        )
        refused.headers["Retry-After"] = str(wait)
        return refused
    form = await request.form()
    token = str(form.get("token", "")).strip()
    # The configured token, else an API token of the store (looked up by its digest).
    api_token = None if guard.token_matches(token) else await board.read(lambda admin: _token_for(admin, token))
    if api_token is None and not guard.token_matches(token):
        throttle.failed(address, "login")
        return render(request, "login.html", status=403, failed=True)
    throttle.succeeded(address)
    session, cookie = guard.new_session(str(form.get("name", "")), api_token)
    role = api_token.role.value if api_token else "admin"
    log.info("login of %s (%s) from %s", session.who, role, capped(address))
    response = redirect(request, "/", "login")
    response.set_cookie(
        COOKIE,
        cookie,
        max_age=SESSION_SECONDS,
        path=request.scope.get("root_path", "") or "/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


def _token_for(admin: Any, secret: str) -> Any:
    try:
        return admin.token_for(secret) if secret else None
    except (StoreError, NotImplementedError):
        return None


async def logout(request: Request) -> Response:
    response = redirect(request, "/", "logout")
    response.delete_cookie(COOKIE, path=request.scope.get("root_path", "") or "/")
    return response


async def checked_form(request: Request, action: str | None) -> tuple[Caller, FormData] | Response:
    """The caller and the posted form of an action, or the 403/401 page: actions need a logged-in
    session whose role allows ``action`` (:func:`tickwork.admin.roles.role_needed`; ``None``: the
    caller checks it, knowing the action from the form) and the form's CSRF token. The
    namespace is the handler's to check (it knows the schedule)."""
    board = _dashboard(request)
    access = access_of(request)
    caller = access.caller
    if not access.actions_enabled:
        return problem(request, 403, "actions are disabled: the dashboard has no token configured (read-only)")
    if caller is None or caller.session is None:
        return problem(request, 401, "log in with a dashboard token first")
    form = await request.form()
    if not board.guard.csrf_matches(caller.session, caller.token, str(form.get("csrf", ""))):
        return problem(request, 403, "the form's CSRF token is missing or stale; reload the page and try again")
    try:
        if action is not None:
            caller.require(action)
    except Forbidden as exc:
        return problem(request, 403, str(exc))
    return caller, form


def address_of(request: Request) -> str:
    return request.client.host if request.client else "-"


async def act(request: Request) -> Response:
    name, action = request.path_params["name"], request.path_params["action"]
    if action not in ONE_ACTIONS and action not in FORM_ACTIONS:
        known = ", ".join((*ONE_ACTIONS, *FORM_ACTIONS))
        return problem(request, 404, f"no such action {action!r}; actions: {known}")
    checked = await checked_form(request, action)
    if isinstance(checked, Response):
        return checked
    caller, form = checked
    board = _dashboard(request)
    address = address_of(request)
    fields = {k: str(v) for k, v in form.items() if isinstance(v, str)}

    def work(admin: Any) -> None:
        scoped(caller, action, address, admin, name)
        if action in FORM_ACTIONS:
            # The same admin API calls as `tickwork jobs pause|resume|backfill` make.
            perform_form(admin, action, name, fields, caller.who, address)
        else:
            perform(admin, action, name, caller.who, address)

    try:
        await board.read(work, request)
        board.changed()
    except Forbidden as exc:
        return problem(request, 403, str(exc))
    except ScheduleNotFoundError as exc:
        return problem(request, 404, str(exc))
    except (DatabaseMissingError, StoreError) as exc:
        return problem(request, 503, str(exc))
    except TickworkError as exc:
        return problem(request, 409, str(exc))
    if action == "remove":
        return redirect(request, "/", action)
    return redirect(request, "/schedules/" + quote(name, safe="") + in_namespace(request_namespace(request)), action)


def is_api(request: Request) -> bool:
    """Whether ``request`` is for the JSON API (answered in JSON, also when refused early)."""
    return request.url.path.startswith(request.scope.get("root_path", "") + "/api/")


async def not_found(request: Request, exc: Exception) -> Response:
    if is_api(request):
        from .api import error

        return error(404, f"no API endpoint {request.url.path}")
    return problem(request, 404, f"no page {request.url.path}")


async def method_not_allowed(request: Request, exc: Exception) -> Response:
    detail = exc.detail if isinstance(exc, HTTPException) else "method not allowed"
    return problem(request, 405, str(detail))
