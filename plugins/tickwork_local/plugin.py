"""Registers the ``local`` executor."""

from __future__ import annotations

from tickwork.abc import Executor
from tickwork.plugin import Registry, hookimpl

from .executor import LocalExecutor


@hookimpl
def tickwork_register_executors(registry: Registry[type[Executor]]) -> None:
    registry.add("local", LocalExecutor)
