"""Registers the ``postgres`` store."""

from __future__ import annotations

from tickwork.abc import Store
from tickwork.plugin import Deferred, Registry, hookimpl

from .settings import PostgresSettings


@hookimpl
def tickwork_register_stores(registry: Registry[type[Store]]) -> None:
    registry.add("postgres", Deferred("tickwork_postgres.store:PostgresStore", section=PostgresSettings))
