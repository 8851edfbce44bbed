"""Declared jobs with and without a namespace of their own (docs/teams.md)."""

from __future__ import annotations

import tickwork


@tickwork.cron("0 3 * * *", name="nightly")
def nightly() -> None:
    pass


@tickwork.every("1h", name="nightly", namespace="billing")
def billing_nightly() -> None:
    pass
