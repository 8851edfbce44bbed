"""Registers ``tickwork bench``. The harness itself is imported only when the command runs."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, ClassVar

from tickwork.plugin import Command, Registry, hookimpl

from .options import add_arguments

if TYPE_CHECKING:
    from tickwork.config import Config


class BenchCommand(Command):
    help = "benchmark claim strategies and memberships with real node processes (docs/benchmarks.md)"
    default_log_level: ClassVar[str] = "WARNING"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def run(self, args: argparse.Namespace, config: Config) -> int:
        from .cli import run

        args.command_line = ["tickwork", *sys.argv[1:]]  # recorded in --out
        return run(args)


@hookimpl
def tickwork_register_commands(registry: Registry[type[Command]]) -> None:
    registry.add("bench", BenchCommand)
