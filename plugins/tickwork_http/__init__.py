"""The ``http`` executor: runs a schedule by POSTing a signed JSON document to a URL."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .executor import HTTPExecutor

__all__ = ["HTTPExecutor"]


def __getattr__(name: str) -> Any:
    # Imported on first use so that loading the plugin does not require httpx (an optional extra).
    if name == "HTTPExecutor":
        from .executor import HTTPExecutor

        return HTTPExecutor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
