"""A schedule row as a test writes it before a migration runs: the columns every revision of
``tickwork_schedules`` requires, and the table as an older revision had it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import TableClause, column, table

from tickwork.sql.schema import schedules


def schedule_row(at: datetime, **fields: Any) -> dict[str, Any]:
    """The values of a minimal cron schedule created and updated ``at``; ``fields`` add or replace."""
    return {
        "name": "old",
        "bucket": 1,
        "trigger_kind": "cron",
        "expression": "0 * * * *",
        "executor": "local",
        "target": "m:f",
        "arguments": {},
        "timeout_s": 60.0,
        "created_at": at,
        "updated_at": at,
        **fields,
    }


def schedules_without(*later: str) -> TableClause:
    """``tickwork_schedules`` without the columns ``later`` migrations add (an insert names none)."""
    return table("tickwork_schedules", *(column(c.name, c.type) for c in schedules.c if c.name not in later))
