"""Registers the ``mysql`` store."""

from __future__ import annotations

from tickwork.abc import Store
from tickwork.plugin import Registry, hookimpl

from .store import MySQLStore


@hookimpl
def tickwork_register_stores(registry: Registry[type[Store]]) -> None:
    registry.add("mysql", MySQLStore)
