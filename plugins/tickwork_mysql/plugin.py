"""Registers the ``mysql`` store."""

from __future__ import annotations

from tickwork.abc import Store
from tickwork.hookspecs import hookimpl
from tickwork.registry import Registry

from .store import MySQLStore


@hookimpl
def tickwork_register_stores(registry: Registry[type[Store]]) -> None:
    registry.add("mysql", MySQLStore)
