"""Registers the ``local`` executor."""

from __future__ import annotations

from tickwork.abc import Executor
from tickwork.plugin.registry import Registry
from tickwork.plugin.specs import hookimpl

from .executor import LocalExecutor


@hookimpl
def tickwork_register_executors(registry: Registry[type[Executor]]) -> None:
    registry.add("local", LocalExecutor)
