"""The namespace a dashboard request acts in (docs/teams.md)."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request

from tickwork.structures import ALL_NAMESPACES, DEFAULT_NAMESPACE, check_namespace

from .queries import BadQuery


def request_namespace(request: Request) -> str:
    """The ``namespace`` query parameter; else every namespace for a read of listings, and
    ``default`` for a page or action of one schedule (a name alone is unique only within its
    namespace) and for a write."""
    given = request.query_params.get("namespace")
    if given:
        if given != ALL_NAMESPACES:
            try:
                check_namespace(given)
            except ValueError as exc:
                raise BadQuery(str(exc)) from None
        return given
    if request.method in ("GET", "HEAD") and "name" not in request.path_params:
        return ALL_NAMESPACES
    return DEFAULT_NAMESPACE


def in_namespace(namespace: str) -> str:
    """The query string that names ``namespace`` in a schedule's URL: none for ``default``, so
    that a cluster of one team keeps the URLs it had."""
    return "" if namespace == DEFAULT_NAMESPACE else "?namespace=" + quote(namespace, safe="")
