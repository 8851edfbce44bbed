"""A module declaring jobs with the decorators, for the deployment-sync tests."""

from __future__ import annotations

import tickwork


@tickwork.cron("*/5 * * * *")
def five_minutes() -> None:
    pass


@tickwork.cron("0 * * * *", name="hourly-report", timeout=30)
def report() -> None:
    pass
