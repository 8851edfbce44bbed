"""Registers the ``local`` executor."""

from __future__ import annotations

from tickwork.abc import Executor
from tickwork.plugin import Deferred, Registry, hookimpl

from .settings import LocalSettings


@hookimpl
def tickwork_register_executors(registry: Registry[type[Executor]]) -> None:
    registry.add("local", Deferred("tickwork_local.executor:LocalExecutor", section=LocalSettings))
