"""``tickwork jobs ACTION``: the schedules."""

from __future__ import annotations

import argparse
from typing import ClassVar

from ...config.files import Config
from ...plugin.command import Command, CommandGroup
from .jobs_bulk import JobsBackfill, JobsDisable, JobsEnable, JobsPause, JobsRelease, JobsRemove, JobsResume
from .jobs_edit import JobsAdd, JobsUpdate
from .jobs_versions import JobsRevert, JobsVersions
from .jobs_view import JobsList, JobsShow, JobsTrigger
from .workdir import import_from_working_directory


class JobsCommand(CommandGroup):
    help = "list, show, add, update, remove and revert schedules"
    description = "Manage schedules."
    actions: ClassVar[dict[str, type[Command]]] = {
        "list": JobsList,
        "show": JobsShow,
        "add": JobsAdd,
        "update": JobsUpdate,
        "remove": JobsRemove,
        "enable": JobsEnable,
        "disable": JobsDisable,
        "pause": JobsPause,
        "resume": JobsResume,
        "backfill": JobsBackfill,
        "trigger": JobsTrigger,
        "release": JobsRelease,
        "versions": JobsVersions,
        "revert": JobsRevert,
    }

    def run(self, args: argparse.Namespace, config: Config) -> int:
        import_from_working_directory()  # targets are checked by importing them
        return super().run(args, config)
