"""The ``[executor.http]`` option names and types, importable without httpx."""

from __future__ import annotations

#: Option names of ``[executor.http]`` mapped to their expected types (see docs/http-executor.md).
OPTIONS: dict[str, type | tuple[type, ...]] = {
    "timeout": (int, float),
    "max_concurrency": int,
    "max_response_bytes": int,
    "follow_redirects": bool,
    "secret_env": str,
    "headers": dict,
    "verify_tls": bool,
}
