"""Helpers shared by the store contract's test classes: a spec, claim everything, end one claim."""

from __future__ import annotations

from datetime import datetime, timedelta

from ..abc import Store
from ..structures import (
    Claim,
    Finish,
    Outcome,
    RunStatus,
    ScheduleSpec,
)

OK = Outcome(RunStatus.SUCCEEDED)
MINUTE = timedelta(minutes=1)


def spec(name: str = "job", **fields: object) -> ScheduleSpec:
    """A schedule spec for contract tests (cron, every minute; the store never evaluates it)."""
    values: dict[str, object] = {"name": name, "trigger_kind": "cron", "expression": "* * * * *", "target": "m:f"}
    values.update(fields)
    return ScheduleSpec(**values)  # type: ignore[arg-type]


def claim_all(store: Store, node: str = "n1", buckets: list[int] | None = None, ahead: float = 0.0) -> list[Claim]:
    return store.claim_due(node, limit=1000, buckets=buckets, ahead=ahead)


def finish(
    store: Store,
    claim: Claim,
    next_fire: datetime | None,
    *,
    node: str = "n1",
    outcome: Outcome = OK,
    skipped: tuple[tuple[datetime, str], ...] = (),
    started_at: datetime | None = None,
) -> bool:
    return store.finish(node, [Finish(claim, outcome, next_fire, skipped=skipped, started_at=started_at)])[0] is True
