"""Registers ``tickwork import``. Importing this module needs no Celery, so ``tickwork --help``
lists the command and running it without Celery is one error line."""

from __future__ import annotations

from tickwork.plugin import Command, Registry, hookimpl

from .command import ImportCommand


@hookimpl
def tickwork_register_commands(registry: Registry[type[Command]]) -> None:
    registry.add("import", ImportCommand)
