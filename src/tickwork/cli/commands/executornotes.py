"""The notes ``jobs add`` and ``jobs update`` print on stderr about a schedule's executor: what
the check against the live nodes could not tell, or what skipping it (``--no-node-check``) left
unchecked (:mod:`tickwork.admin.liveexecutors`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from ...admin.api import Admin
from ...admin.info import ScheduleInfo
from ...admin.liveexecutors import ExecutorCheck


def add_node_check_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-node-check",
        dest="check_nodes",
        action="store_false",
        help="do not check the executor against the live nodes (each publishes which executors it runs): to "
        "deploy a schedule before the nodes that will run it; the local configuration must configure it then",
    )


def executor_notes(admin: Admin, executors: Iterable[str], *, checked: bool) -> None:
    """One note per executor of the written schedules that needs one: a live node that will
    park them (the check skipped), or why the live nodes could not be asked. A schedule on the
    default executor gets no note for that: every node runs its own default executor."""
    live = admin.live_executors()
    default = admin.config.scheduler.default_executor
    for name in sorted(set(executors)):
        note = _note(live.check(name), checked=checked, default=default, here=name in admin.specs.configured())
        if note is not None:
            print(f"tickwork: note: {note}", file=sys.stderr)


def _note(check: ExecutorCheck, *, checked: bool, default: str, here: bool) -> str | None:
    name = check.executor
    if check.refused:  # only when the check was skipped: it refuses otherwise
        one = len(check.lacking) == 1
        nodes = ", ".join(n.id for n in check.lacking)
        return (
            f"not checked against the live nodes (--no-node-check): live node{'' if one else 's'} {nodes} "
            f"{'does' if one else 'do'} not run executor {name!r} and will park its schedules until "
            f"[executor.{name}] is configured there and {'it is' if one else 'they are'} restarted"
        )
    if check.run_by_live_nodes:
        if here:
            return None
        return (
            f"the target was not checked here: executor {name!r} is not configured in {check.where} "
            "(the live nodes run it)"
        )
    unchecked = check.note()
    if unchecked is None or name == default:
        return None
    return (
        f"{unchecked}: the nodes need an [executor.{name}] table in their own configuration, or they park "
        "schedules on it"
    )


def enabled_notes(admin: Admin, infos: Iterable[ScheduleInfo]) -> None:
    """A note when schedules were enabled (``jobs enable``, the fix of a parked one) while a live
    node still lacks their executor: it would park them again. Enabling is not refused: the
    fault is cleared either way, and the note says what is still missing."""
    by_executor: dict[str, list[str]] = {}
    for info in infos:
        by_executor.setdefault(info.executor, []).append(info.name)
    live = admin.live_executors()
    for name, schedules in sorted(by_executor.items()):
        check = live.check(name)
        if not check.refused:
            continue
        one = len(check.lacking) == 1
        which = schedules[0] if len(schedules) == 1 else f"{len(schedules)} of them"
        print(
            f"tickwork: note: live node{'' if one else 's'} {', '.join(n.id for n in check.lacking)} "
            f"{'does' if one else 'do'} not run executor {name!r} and will park {which} again: configure "
            f"[executor.{name}] on the nodes and restart them",
            file=sys.stderr,
        )
