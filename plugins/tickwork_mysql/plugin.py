"""Registers the ``mysql`` store."""

from __future__ import annotations

from tickwork.abc import Store
from tickwork.plugin import Deferred, Registry, hookimpl

from .settings import MySQLSettings


@hookimpl
def tickwork_register_stores(registry: Registry[type[Store]]) -> None:
    registry.add("mysql", Deferred("tickwork_mysql.store:MySQLStore", section=MySQLSettings))
