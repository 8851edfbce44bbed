"""The subcommands of ``tickwork``: the built-in ones (``run``, ``jobs``, ...) and those plugins
add (``tickwork web``, the dashboard plugin's).

Every command is a :class:`Command` subclass registered through the ``tickwork_register_commands``
hook; the core registers its own through the same hook, from an internal plugin that is loaded
first and cannot be blocked (:data:`tickwork.plugin.manager.INTERNAL_PLUGINS`). The command line
adds each with the global options and runs it with the loaded configuration. A command with
sub-commands (``tickwork jobs list``) is a :class:`CommandGroup`. Errors are reported alike (one
line, exit 2 for :class:`~tickwork.errors.ConfigError`, 1 for other
:class:`~tickwork.errors.TickworkError`).
"""

from __future__ import annotations

import argparse
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:  # config imports the plugin manager, which imports this module
    from ..config.files import Config


class Command(ABC):
    """One ``tickwork NAME`` subcommand; instantiated without arguments when it runs."""

    #: One line for ``tickwork --help`` (lower case, no final period, like the built-ins).
    help: ClassVar[str] = ""
    #: The first line of ``tickwork NAME --help`` (default: ``help`` as a sentence).
    description: ClassVar[str] = ""
    #: Log level when neither ``--log-level`` nor ``$TICKWORK_LOG_LEVEL`` is given.
    default_log_level: ClassVar[str] = "WARNING"
    #: The command reads the configuration file itself (``tickwork config check`` reports a
    #: file's problems rather than fail on them): :meth:`run` is given the defaults.
    reads_config_itself: ClassVar[bool] = False
    #: The exit status of every error of the command, usage errors included, for a command whose
    #: statuses say something else (``tickwork apply --plan``: 2 is "changes", as ``terraform plan
    #: -detailed-exitcode``); ``None``: 2 for invalid input, 1 for the rest.
    error_status: ClassVar[int | None] = None

    @classmethod
    def reads_own_config(cls, args: argparse.Namespace) -> bool:
        """Whether the command run with ``args`` reads the configuration file itself."""
        return cls.reads_config_itself

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add the command's own options to its subparser (the global ones are already there)."""
        return None  # a command without options of its own

    @abstractmethod
    def run(self, args: argparse.Namespace, config: Config) -> int:
        """Run the command; return the exit status."""


class CommandGroup(Command):
    """A command whose first argument names one of its ``actions`` (``tickwork jobs list``,
    ``tickwork db upgrade``): each action is a :class:`Command` of its own, with its own options
    and the global ones. Running the group runs the chosen action."""

    #: Action name -> command, in the order ``--help`` lists them.
    actions: ClassVar[dict[str, type[Command]]] = {}

    @classmethod
    def reads_own_config(cls, args: argparse.Namespace) -> bool:
        return cls.actions[args.action].reads_own_config(args)

    def run(self, args: argparse.Namespace, config: Config) -> int:
        action: str = args.action
        return self.actions[action]().run(args, config)
