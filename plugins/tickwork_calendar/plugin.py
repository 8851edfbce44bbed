"""Registers the ``calendar`` trigger (systemd calendar events) with tickwork."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tickwork.plugin import hookimpl

from .trigger import CalendarTrigger

if TYPE_CHECKING:
    from tickwork.abc import Trigger
    from tickwork.plugin.registry import Registry


@hookimpl
def tickwork_register_triggers(registry: Registry[type[Trigger]]) -> None:
    """Register :class:`CalendarTrigger` as kind ``calendar``."""
    registry.add("calendar", CalendarTrigger)
