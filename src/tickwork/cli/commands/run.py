"""``tickwork run [--for SECONDS]``: a scheduler node until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import logging
from typing import ClassVar

from ...config.files import Config
from ...node import logformat
from ...node.node import Node
from ...plugin.command import Command
from ..argtypes import seconds
from .workdir import import_from_working_directory


class RunCommand(Command):
    help = "run a scheduler node until Ctrl-C or SIGTERM"
    default_log_level: ClassVar[str] = "INFO"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--for", dest="duration", type=seconds, metavar="SECONDS", help="stop cleanly after SECONDS"
        )

    def run(self, args: argparse.Namespace, config: Config) -> int:
        import_from_working_directory()
        # Same level; the configured format; lines written from a thread of their own, so that a
        # stderr nobody reads never stops the node's loop.
        logformat.configure(logging.getLogger().level, config.logging.format, background=True)
        node = Node(config)
        node.run(args.duration, tune_process=True)  # the process is the node's own
        return 0
