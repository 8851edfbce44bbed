"""Registers the ``sqlite`` store."""

from __future__ import annotations

from tickwork.abc import Store
from tickwork.plugin import Deferred, Registry, hookimpl

from .settings import SQLiteSettings


@hookimpl
def tickwork_register_stores(registry: Registry[type[Store]]) -> None:
    registry.add("sqlite", Deferred("tickwork_sqlite.store:SQLiteStore", section=SQLiteSettings))
