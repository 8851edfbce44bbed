"""Which targets the ``http`` executor accepts: an absolute ``http``/``https`` URL with a host,
and arguments that survive JSON."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import httpx

from tickwork.errors import ExecutorError

from .redact import safe_url

_SCHEMES = ("http", "https")


def check_target(target: str, arguments: dict[str, Any]) -> None:
    """Accept an absolute ``http``/``https`` URL with a host, and JSON-serialisable arguments.

    :raises tickwork.errors.ExecutorError: naming what is wrong (credentials in the URL are not echoed)
    """
    if not isinstance(target, str) or not target.strip():
        raise ExecutorError(f"http target must be a URL, got {target!r}")
    shown = safe_url(target)
    if any(ch.isspace() or ord(ch) < 32 for ch in target):
        raise ExecutorError(f"http target {shown!r} contains whitespace or control characters")
    try:
        parts = urlsplit(target)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as exc:
        raise ExecutorError(f"http target {shown!r} is not a valid URL: {exc}") from None
    if parts.scheme.lower() not in _SCHEMES:
        scheme = parts.scheme or "none"
        raise ExecutorError(f"http target {shown!r} must use http or https, not {scheme!r}")
    if not parts.hostname:
        raise ExecutorError(f"http target {shown!r} has no host")
    try:
        httpx.URL(target)
    except httpx.InvalidURL as exc:
        raise ExecutorError(f"http target {shown!r} is not a valid URL: {exc}") from None
    try:
        json.dumps(arguments, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ExecutorError(f"arguments for {shown!r} are not JSON-serialisable: {exc}") from None
