"""The statement cache: hot statements built once per store (constructing a statement costs more
Python than executing its cached compiled form)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .prepared import Prepared

S = TypeVar("S")


class StatementCache:
    """Statements by key, each built on first use; :meth:`prepared` ones also wrapped by the
    store's way of executing them (:mod:`tickwork.sql.prepared`)."""

    def __init__(self, prepare: Callable[[Any], Prepared]) -> None:
        self._prepare = prepare
        self._built: dict[str, Any] = {}

    def get(self, key: str, build: Callable[[], S]) -> S:
        stmt = self._built.get(key)
        if stmt is None:
            stmt = self._built[key] = build()
        return stmt

    def prepared(self, key: str, build: Callable[[], Any]) -> Prepared:
        return self.get(f"prepared/{key}", lambda: self._prepare(build()))
