"""Jobs of the Django example: they run with the project's settings (and ORM) available."""

from __future__ import annotations

import logging

from django.conf import settings

import tickwork

log = logging.getLogger(__name__)


@tickwork.every("1s", name="reports.refresh")
def refresh(run: tickwork.RunContext) -> None:
    log.warning("refreshing reports for %s (due %s)", settings.REPORTS_RECIPIENT, run.scheduled_for.isoformat())
