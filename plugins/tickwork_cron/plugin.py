"""Registers the ``cron`` trigger with tickwork."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tickwork.plugin import hookimpl

from .trigger import CronTrigger

if TYPE_CHECKING:
    from tickwork.abc import Trigger
    from tickwork.plugin.registry import Registry


@hookimpl
def tickwork_register_triggers(registry: Registry[type[Trigger]]) -> None:
    """Register :class:`CronTrigger` as kind ``cron``."""
    registry.add("cron", CronTrigger)
