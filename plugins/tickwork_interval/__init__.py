"""The built-in ``interval`` (every fixed duration) and ``once`` (a single date-time) triggers."""

from __future__ import annotations

from .interval import IntervalTrigger
from .once import OnceTrigger

__all__ = ["IntervalTrigger", "OnceTrigger"]
