"""Registers the ``tickwork web`` command. Importing this module needs none of the ``web`` extra's
packages, so ``tickwork --help`` lists the command and running it without them is one error line."""

from __future__ import annotations

from tickwork.plugin import Command, Registry, hookimpl

from .command import WebCommand


@hookimpl
def tickwork_register_commands(registry: Registry[type[Command]]) -> None:
    registry.add("web", WebCommand)
