"""Subcommands that plugins add to ``tickwork`` (``tickwork web`` is one: the dashboard plugin's).

A plugin registers a :class:`Command` subclass through the ``tickwork_register_commands`` hook;
the command line adds it next to the built-in commands, with the global options, and runs it with
the loaded configuration. Errors are reported like the built-in commands' (one line, exit 2 for
:class:`~tickwork.errors.ConfigError`, 1 for other :class:`~tickwork.errors.TickworkError`).
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
    #: Log level when neither ``--log-level`` nor ``$TICKWORK_LOG_LEVEL`` is given.
    default_log_level: ClassVar[str] = "WARNING"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add the command's own options to its subparser (the global ones are already there)."""
        return None  # a command without options of its own

    @abstractmethod
    def run(self, args: argparse.Namespace, config: Config) -> int:
        """Run the command; return the exit status."""
