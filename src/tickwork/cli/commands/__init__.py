"""The built-in commands of ``tickwork``, registered by this internal plugin through the hook
third-party commands use (:data:`tickwork.plugin.manager.INTERNAL_PLUGINS` loads it first, and
``[plugins] block`` cannot block it). A plugin's command may not take one of these names."""

from __future__ import annotations

from ...plugin import Command, Registry, hookimpl
from .apply import ApplyCommand
from .check import CheckCommand
from .configfile import ConfigCommand
from .db import DbCommand
from .history import HistoryCommand
from .jobs import JobsCommand
from .nextfires import NextCommand
from .nodes import NodesCommand
from .run import RunCommand
from .tokens import TokensCommand

#: In the order ``tickwork --help`` lists them.
BUILTIN: dict[str, type[Command]] = {
    "run": RunCommand,
    "next": NextCommand,
    "jobs": JobsCommand,
    "apply": ApplyCommand,
    "history": HistoryCommand,
    "nodes": NodesCommand,
    "check": CheckCommand,
    "config": ConfigCommand,
    "db": DbCommand,
    "tokens": TokensCommand,
}


@hookimpl(tryfirst=True)  # first: the built-ins keep their names and lead `tickwork --help`
def tickwork_register_commands(registry: Registry[type[Command]]) -> None:
    for name, command in BUILTIN.items():
        registry.add(name, command)
