"""The built-in ``cron`` trigger (classic 5/6/7-field cron expressions in an IANA zone)."""

from __future__ import annotations

from .trigger import CronTrigger

__all__ = ["CronTrigger"]
