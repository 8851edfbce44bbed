"""Commands that act through the admin API (:class:`tickwork.Admin`), so that the CLI can do
nothing a program cannot."""

from __future__ import annotations

import argparse
from abc import abstractmethod

from ...admin.api import Admin
from ...config.files import Config
from ...plugin.command import Command


class AdminCommand(Command):
    """A command run with an :class:`Admin` on the configuration, closed when it ends."""

    def run(self, args: argparse.Namespace, config: Config) -> int:
        with Admin(config) as admin:
            return self.act(args, admin)

    @abstractmethod
    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        """Do the command's work; return the exit status."""
