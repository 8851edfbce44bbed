"""The Starlette application: routes, shared state, error pages. Pages are in :mod:`.pages`, the
JSON API in :mod:`.api`; both read and act through a per-request :class:`~tickwork.admin.Admin`."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from tickwork.admin import Admin, ConfigSource, load_config
from tickwork.plugin.tracebacks import for_people
from tickwork.structures import ALL_NAMESPACES

from . import api, editing, pages
from .access import Identify, readable_namespace
from .adminpool import AdminPool
from .auth import Guard, Throttle
from .charts import Chart
from .failures import failure_groups
from .limits import BodyLimit
from .memo import CHART_SECONDS, STRIP_SECONDS, Memo
from .namespaces import in_namespace
from .settings import WebSettings
from .summary import Summary, fires
from .timefmt import duration, is_utc, relative, utc_text, zone_text
from .words import describe

HERE = Path(__file__).parent
T = TypeVar("T")
#: A token shorter than this is warned about at start-up (it is all that guards the actions).
MIN_TOKEN_LENGTH = 16
#: The largest form a page may be sent: more than the API's JSON (:data:`.api.MAX_BODY`), since
#: a selection may name 500 schedules, each percent-encoded.
MAX_FORM = 256 * 1024

log = logging.getLogger("tickwork.web")


class Dashboard:
    """What every request handler needs: the admin pool, the guard and the templates."""

    def __init__(self, pool: AdminPool, settings: WebSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.pool = pool
        self.settings = settings
        self.guard = Guard(settings.token)
        self.throttle = Throttle(clock)
        self.overall: Memo[Chart] = Memo(CHART_SECONDS, clock)
        self.strip: Memo[Summary] = Memo(STRIP_SECONDS, clock)
        self.templates = Environment(
            loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]), auto_reload=False
        )
        self.templates.filters.update(
            utc=utc_text, relative=relative, words=describe, quote=lambda s: quote(str(s), safe=""), zoned=zone_text
        )
        self.templates.filters["fires"] = fires
        # A schedule's URL names its namespace unless it is the default one (docs/teams.md).
        self.templates.filters["in_namespace"] = in_namespace
        # Tracebacks as `history --show` prints them: without tickwork's own frames.
        self.templates.filters.update(for_people=for_people, failure_groups=failure_groups)
        self.templates.globals.update(duration=duration, is_utc=is_utc)

    def changed(self) -> None:
        """An action changed schedules: the next page shows the summary strip as it is now."""
        self.strip.forget()

    async def read(self, work: Callable[[Admin], T], request: Request | None = None) -> T:
        """Run ``work`` with an admin of the pool in a worker thread (the admin API blocks), in
        the namespace ``request`` asks for (:func:`request_namespace`; without one, every one)."""
        namespace = ALL_NAMESPACES if request is None else readable_namespace(request)

        def call() -> T:
            with self.pool.admin(namespace) as admin:
                return work(admin)

        return await run_in_threadpool(call)


def dashboard_of(request: Request) -> Dashboard:
    found: Dashboard = request.app.state.dashboard
    return found


def body_limit(request: Request) -> int:
    if request.url.path in api.APPLY_PATHS:
        return api.MAX_APPLY_BODY
    return api.MAX_BODY if pages.is_api(request) else MAX_FORM


def too_large(request: Request, limit: int) -> Response:
    if pages.is_api(request):
        return api.error(413, f"the body is larger than {limit // 1024} KiB")
    return pages.problem(request, 413, f"the form is larger than {limit // 1024} KiB")


def build_app(
    config: ConfigSource = None,
    *,
    token: str | None = None,
    settings: WebSettings | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Starlette:
    """See :func:`tickwork_web.app`. ``clock``: the monotonic seconds of the login back-off."""
    loaded = load_config(config)
    settings = settings or WebSettings.from_config(loaded, token=token)
    if settings.token is not None and len(settings.token) < MIN_TOKEN_LENGTH:
        log.warning(
            "the dashboard token (%s) is only %d characters: anyone who can reach the dashboard may guess it; "
            "use at least %d random characters (openssl rand -hex 24)",
            settings.token_source,
            len(settings.token),
            MIN_TOKEN_LENGTH,
        )
    pool = AdminPool(loaded)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        pool.close()

    routes: list[Any] = [
        Route("/", pages.schedules, name="schedules"),
        Route("/runs", pages.runs, name="runs"),
        Route("/nodes", pages.nodes, name="nodes"),
        Route("/login", pages.login_form, methods=["GET"], name="login"),
        Route("/login", pages.login, methods=["POST"]),
        Route("/logout", pages.logout, methods=["POST"], name="logout"),
        Route("/new", editing.new_form, methods=["GET"], name="new"),
        Route("/new", editing.create, methods=["POST"]),
        Route("/edit/{name:path}", editing.edit_form, methods=["GET"], name="edit"),
        Route("/edit/{name:path}", editing.edit, methods=["POST"]),
        Route("/selection", editing.bulk, methods=["POST"], name="selection"),
        Route("/schedules/{name:path}/{action}", pages.act, methods=["POST"], name="act"),
        Route("/schedules/{name:path}", pages.schedule, name="schedule"),
        Route("/api/schedules", api.schedules, methods=["GET"]),
        Route("/api/schedules", api.create, methods=["POST"]),
        Route("/api/plan", api.plan, methods=["POST"]),
        Route("/api/apply", api.apply, methods=["POST"]),
        Route("/api/runs", api.runs),
        Route("/api/nodes", api.nodes),
        Route("/api/schedules/{name:path}/{action}", api.act, methods=["POST"]),
        Route("/api/schedules/{name:path}", api.remove, methods=["DELETE"]),
        Route("/api/schedules/{name:path}", api.update, methods=["PATCH"]),
        Route("/api/schedules/{name:path}", api.schedule, methods=["GET"]),
        Route("/api/{rest:path}", api.not_found),
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={404: pages.not_found, 405: pages.method_not_allowed},
        # Inside Starlette's error middleware (anything it raises is still a logged 500) and
        # outside the routes, so a body is refused before any handler starts reading it.
        # Identify (the caller, once per request) inside it: a refused body is never looked up.
        middleware=[Middleware(BodyLimit, limit_of=body_limit, refuse=too_large), Middleware(Identify)],
    )
    app.state.dashboard = Dashboard(pool, settings, clock)
    return app
