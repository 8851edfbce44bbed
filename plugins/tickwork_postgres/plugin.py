"""Registers the ``postgres`` store."""

from __future__ import annotations

from tickwork.abc import Store
from tickwork.plugin import Registry, hookimpl

from .store import PostgresStore


@hookimpl
def tickwork_register_stores(registry: Registry[type[Store]]) -> None:
    registry.add("postgres", PostgresStore)
