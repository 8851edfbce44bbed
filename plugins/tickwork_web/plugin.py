"""Registers the ``tickwork web`` command and declares the ``[web]`` table. Importing this module
needs none of the ``web`` extra's packages, so ``tickwork --help`` lists the command and running
it without them is one error line."""

from __future__ import annotations

from tickwork.config import ConfigTables
from tickwork.plugin import Command, Registry, hookimpl

from .command import WebCommand
from .settings import WebConfig


@hookimpl
def tickwork_register_commands(registry: Registry[type[Command]]) -> None:
    registry.add("web", WebCommand)


@hookimpl
def tickwork_add_config(tables: ConfigTables) -> None:
    tables.add(WebConfig)
