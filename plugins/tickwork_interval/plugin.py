"""Registers the ``interval`` and ``once`` triggers with tickwork."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tickwork.plugin import hookimpl

from .interval import IntervalTrigger
from .once import OnceTrigger

if TYPE_CHECKING:
    from tickwork.abc import Trigger
    from tickwork.plugin.registry import Registry


@hookimpl
def tickwork_register_triggers(registry: Registry[type[Trigger]]) -> None:
    """Register :class:`IntervalTrigger` as ``interval`` and :class:`OnceTrigger` as ``once``."""
    registry.add("interval", IntervalTrigger)
    registry.add("once", OnceTrigger)
