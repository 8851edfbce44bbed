"""Who is asking, and what they may do (docs/web.md#roles-and-tokens).

:class:`Identify`, a middleware, finds the caller of every request once: a browser's session
cookie (pages) or an ``Authorization: Bearer`` token (``/api``), either the configured token (an
admin of every namespace) or an API token of the store (its role and namespaces). It refuses a
wrong bearer token (403, 429 after repeated failures) and, with ``[web] public_reads = false``, a
request without a caller (401, or the login page). The handlers then ask :meth:`Caller.may` for
the role and :meth:`Caller.sees` for the namespace: both questions are answered in
:mod:`tickwork.admin.roles` (``role_needed``, ``may_act_on``), nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from tickwork.admin import Admin
from tickwork.admin.roles import may_act_on, namespace_of, role_needed, scope
from tickwork.errors import ScheduleNotFoundError, StoreError
from tickwork.structures import ALL_NAMESPACES, ApiToken, Role

from .actions import audit
from .auth import COOKIE, Session, clean_name
from .namespaces import request_namespace

if TYPE_CHECKING:
    from .application import Dashboard

#: Pages a browser without a session may open when reads are not public.
OPEN_PAGES = ("/login", "/logout", "/static/")


class Forbidden(Exception):
    """The caller's role or namespaces do not allow this (403; the message says why)."""


@dataclass(frozen=True)
class Caller:
    """Who acts: ``who`` for the action log and the versions' author, the ``role``, and the API
    ``token`` (``None``: the configured token, an admin of every namespace)."""

    who: str
    role: Role
    token: ApiToken | None = None
    session: Session | None = None

    def may(self, action: str) -> bool:
        return self.role.allows(role_needed(action))

    def require(self, action: str) -> None:
        needed = role_needed(action)
        if not self.role.allows(needed):
            raise Forbidden(f"{self.described} may not {action}: that needs the {needed.value} role")

    @property
    def described(self) -> str:
        return f"token {self.token.name!r} ({self.role.value})" if self.token else f"the {self.role.value} token"


def sees(caller: Caller | None, info: Any) -> bool:
    """Whether ``caller`` (``None``: an anonymous reader of public reads) may see or act on the
    schedule ``info``."""
    return may_act_on(None if caller is None else caller.token, namespace_of(info))


def check_scope(caller: Caller | None, infos: Iterable[Any]) -> None:
    """:raises Forbidden: for the first schedule of ``infos`` outside the caller's namespaces"""
    for info in infos:
        if not sees(caller, info):
            assert caller is not None
            raise Forbidden(
                f"{caller.described} may not act on schedule {info.name!r} of namespace {namespace_of(info)!r}"
            )


def scoped(caller: Caller, action: str, address: str, admin: Admin, name: str) -> None:
    """:raises Forbidden: schedule ``name`` is outside the caller's namespaces (audited as a
    refused ``action``)
    :raises tickwork.ScheduleNotFoundError: there is no such schedule"""
    try:
        check_scope(caller, [admin.get(name)])
    except (Forbidden, ScheduleNotFoundError) as exc:  # both are refusals the action log keeps
        audit(action, name, caller.who, address, refused=str(exc))
        raise


def readable_namespace(request: Request) -> str:
    """The namespace ``request`` reads or acts in (:func:`.namespaces.request_namespace`), within
    its caller's token scope: a token of some namespaces reads only those — every namespace
    (the lists' default) becomes its one namespace, and another is refused.

    :raises Forbidden: a namespace outside the token's scope, or every namespace for a token of
        several (it names one: ``?namespace=NAME``)
    """
    namespace = request_namespace(request)
    caller = access_of(request).caller
    allowed = scope(None if caller is None else caller.token)
    if caller is None or allowed is None:
        return namespace
    if namespace == ALL_NAMESPACES:
        if len(allowed) == 1:
            return allowed[0]
        raise Forbidden(f"{caller.described} reads the namespaces {', '.join(allowed)}: name one (?namespace=NAME)")
    if namespace not in allowed:
        raise Forbidden(f"{caller.described} may not read or act in namespace {namespace!r}")
    return namespace


@dataclass(frozen=True)
class Access:
    """What :class:`Identify` found for one request."""

    caller: Caller | None
    #: Whether anyone could log in: a token is configured, or the store holds API tokens.
    actions_enabled: bool

    def csrf(self, board: Dashboard) -> str:
        if self.caller is None or self.caller.session is None:
            return ""
        return board.guard.csrf_token(self.caller.session, self.caller.token)


def access_of(request: Request) -> Access:
    found = getattr(request.state, "access", None)
    return found if isinstance(found, Access) else Access(None, False)


def _json_error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _tokens_exist(admin: Admin) -> bool:
    try:
        return bool(admin.tokens())
    except (StoreError, NotImplementedError):  # no database yet, an old schema, a store without tokens
        return False


def _lookup(admin: Admin) -> Any:
    def find(name: str) -> ApiToken | None:
        try:
            return admin.token_named(name)
        except StoreError:
            return None

    return find


class Identify:
    """The middleware that sets ``request.state.access`` (see the module's docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        from . import pages
        from .application import dashboard_of

        board = dashboard_of(request)
        path = request.url.path[len(scope.get("root_path", "")) :]
        if path.startswith("/static/"):
            await self.app(scope, receive, send)
            return
        api = pages.is_api(request)
        found = await (self._bearer(request, board) if api else self._cookie(request, board))
        if isinstance(found, Response):
            await found(scope, receive, send)
            return
        scope.setdefault("state", {})["access"] = found
        if found.caller is None and not board.settings.public_reads and not path.startswith(OPEN_PAGES):
            refused: Response
            if api:
                refused = _json_error(
                    401,
                    "reads need a token here ([web] public_reads = false): Authorization: Bearer TOKEN",
                    {"WWW-Authenticate": 'Bearer realm="tickwork"'},
                )
            else:
                refused = RedirectResponse(scope.get("root_path", "") + "/login", status_code=303)
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _cookie(self, request: Request, board: Dashboard) -> Access:
        cookie = request.cookies.get(COOKIE)

        def work(admin: Admin) -> Access:
            found = board.guard.session(cookie, _lookup(admin)) if cookie else None
            enabled = board.guard.enabled or _tokens_exist(admin)
            if found is None:
                return Access(None, enabled)
            session, token = found
            role = token.role if token else Role.ADMIN
            return Access(Caller(session.who, role, token, session), True)

        return await board.read(work)

    async def _bearer(self, request: Request, board: Dashboard) -> Access | Response:
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        given = given.strip()
        if scheme.lower() != "bearer" or not given:
            if header:
                return _json_error(
                    401,
                    "the Authorization header must be: Bearer TOKEN",
                    {"WWW-Authenticate": 'Bearer realm="tickwork"'},
                )
            return Access(None, board.guard.enabled or await board.read(_tokens_exist))
        address = request.client.host if request.client else "-"
        wait = board.throttle.wait(address)
        if wait:
            return _json_error(
                429, f"too many failed token checks from {address}: try again in {wait} s", {"Retry-After": str(wait)}
            )
        user = clean_name(request.headers.get("x-tickwork-user", ""))
        if board.guard.token_matches(given):
            board.throttle.succeeded(address)
            return Access(Caller(f"{user} (API token)" if user else "API token", Role.ADMIN), True)

        def work(admin: Admin) -> tuple[ApiToken | None, bool]:
            try:
                return admin.token_for(given), True
            except (StoreError, NotImplementedError):
                return None, False

        token, _ = await board.read(work)
        if token is None:
            if not board.guard.enabled and not await board.read(_tokens_exist):
                return _json_error(403, "actions are disabled: the dashboard has no token configured (read-only)")
            board.throttle.failed(address, "bearer token")
            return _json_error(403, "the bearer token is not valid")
        board.throttle.succeeded(address)
        who = f"{user} (token {token.name})" if user else f"token {token.name}"
        return Access(Caller(who, token.role, token), True)
