"""The ``http`` executor: runs a schedule by POSTing a signed JSON document to a URL."""

from __future__ import annotations

from .executor import HTTPExecutor

__all__ = ["HTTPExecutor"]
