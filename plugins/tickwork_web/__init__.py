"""``tickwork_web`` — the dashboard: schedules, next fires, history, nodes and actions in a browser,
with the same data as JSON under ``/api``. Install with ``pip install 'tickwork[web]'``.

Run it with ``tickwork web``, or mount it in your own ASGI application::

    from starlette.applications import Starlette
    from starlette.routing import Mount
    import tickwork_web

    app = Starlette(routes=[Mount("/tickwork", app=tickwork_web.app("tickwork.toml"))])

Everything it shows and does goes through the public admin API (:mod:`tickwork.admin`).
See docs/web.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tickwork.admin import ConfigSource

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["app"]


def app(config: ConfigSource = None, *, token: str | None = None) -> Starlette:
    """The dashboard as an ASGI application on a configuration (a TOML path, ``None`` for the
    CLI's discovery, a dict shaped like the file, or a :class:`tickwork.config.Config`).

    :param token: the bearer token that enables actions; ``None`` reads ``[web] token_env`` or
        ``$TICKWORK_WEB_TOKEN``; without any token the dashboard is read-only
    :raises tickwork.ConfigError: if the ``web`` extra is not installed or the config is invalid
    """
    from .requirements import require

    require()
    from .application import build_app

    return build_app(config, token=token)
