"""The built-in ``calendar`` trigger: systemd calendar events (``systemd.time(7)``)."""

from __future__ import annotations

from .trigger import CalendarTrigger

__all__ = ["CalendarTrigger"]
