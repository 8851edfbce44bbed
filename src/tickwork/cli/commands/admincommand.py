"""Commands that act through the admin API (:class:`tickwork.Admin`), so that the CLI can do
nothing a program cannot."""

from __future__ import annotations

import argparse
import getpass
from abc import abstractmethod

from ...admin.api import Admin
from ...config.files import Config
from ...errors import ScheduleNotFoundError
from ...plugin.command import Command
from ..parser import namespace_of


class AdminCommand(Command):
    """A command run with an :class:`Admin` on the configuration, closed when it ends."""

    def run(self, args: argparse.Namespace, config: Config) -> int:
        with Admin(config, namespace=namespace_of(args)) as admin:
            try:
                return self.act(args, admin)
            except ScheduleNotFoundError as exc:
                if len(exc.names) > 1:
                    raise
                # Rebuilt with the names that exist: a typo gets "did you mean".
                raise ScheduleNotFoundError(exc.name, known=admin.names()) from None

    @abstractmethod
    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        """Do the command's work; return the exit status."""


def operator() -> str | None:
    """Who runs the command (the OS login name): the ``by`` of a pause, a release and the
    versions a command writes."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return None
