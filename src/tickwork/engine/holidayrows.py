"""Where the skipped rows of fires a holiday rule dropped start (docs/holidays.md#when-the-skipped-rows-are-written):
a fire's end records the dropped times before it that the history has not recorded yet, those
after what the history last recorded of the schedule's earlier fires. Read only when such drops
exist (a fire after a holiday), never on a plain fire's path."""

from __future__ import annotations

import logging
from datetime import datetime

from ..abc import Store
from ..errors import StoreError
from ..structures import Claim

log = logging.getLogger("tickwork.engine")

#: Rows read back from the schedule's history: the fire's own attempts come first (newest
#: first), then what the history recorded of the fires before it.
HISTORY_ROWS = 20


def recorded_until(store: Store, claim: Claim) -> datetime | None:
    """When the history last recorded a fire of ``claim``'s schedule before ``claim``'s (its
    end, its start for one still running, else its time); ``None``: it recorded none in its
    last :data:`HISTORY_ROWS` rows, or the store did not answer (then the drops before the fire
    are not recorded: a missing row rather than one that may predate the schedule)."""
    try:
        rows = store.history(limit=HISTORY_ROWS, schedule=claim.spec.name)
    except StoreError as exc:
        log.warning(
            "%s: cannot read its history (%s); the holiday skips before this fire are not recorded",
            claim.spec.name,
            exc,
        )
        return None
    ends = [r.finished_at or r.started_at or r.scheduled_for for r in rows if r.scheduled_for < claim.scheduled_for]
    return max(ends, default=None)
