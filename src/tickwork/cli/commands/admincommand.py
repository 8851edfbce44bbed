"""Commands that act through the admin API (:class:`tickwork.Admin`), so that the CLI can do
nothing a program cannot."""

from __future__ import annotations

import argparse
import getpass
from abc import abstractmethod
from typing import ClassVar

from ...admin.api import Admin
from ...config.files import Config
from ...errors import ScheduleNotFoundError
from ...plugin.command import Command
from ...structures import DEFAULT_NAMESPACE
from ..parser import namespace_of


class AdminCommand(Command):
    """A command run with an :class:`Admin` on the configuration, closed when it ends."""

    #: Whether it acts in the namespace of ``--namespace`` (``tokens`` does not: for it the
    #: option names a token's scope).
    namespaced: ClassVar[bool] = True

    def run(self, args: argparse.Namespace, config: Config) -> int:
        namespace = namespace_of(args) if self.namespaced else DEFAULT_NAMESPACE
        with Admin(config, namespace=namespace) as admin:
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
