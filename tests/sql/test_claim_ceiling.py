"""A store takes as many fires per claim as its ``claim_ceiling`` says, however many it is asked
for (docs/claim-protocol.md#claim-size): ten batches on every SQL claim strategy but ``mark``
(one fire per transaction, whose ceiling is its batch) and on ``MemoryStore``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.stores import CONTRACT_PARAMS, make_store
from tickwork.abc import CLAIM_GROWTH
from tickwork.structures import ScheduleSpec

BATCH = 3


@pytest.mark.parametrize("store_kind", CONTRACT_PARAMS)
def test_a_claim_takes_up_to_the_ceiling_and_no_more(
    store_kind: tuple[str, str], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    kind, claim = store_kind
    store = make_store(kind, claim, request, tmp_path, batch_size=BATCH)
    try:
        ceiling = BATCH if claim == "mark" else CLAIM_GROWTH * BATCH
        assert store.claim_ceiling == ceiling
        now = store.now()
        for i in range(CLAIM_GROWTH * BATCH + 5):
            store.add(ScheduleSpec(f"every-minute-{i:02d}", "cron", "* * * * *", "m:f"), now)
        # All of them due within the minute ahead: asked for more than there are, a claim takes
        # the ceiling; asked for fewer than the ceiling, what it was asked for.
        first = store.claim_due("n1", limit=1000, buckets=None, ahead=61.0)
        assert len(first) == ceiling
        second = store.claim_due("n1", limit=2, buckets=None, ahead=61.0)
        assert len(second) == 2
        assert not {c.schedule_id for c in first} & {c.schedule_id for c in second}
    finally:
        store.close()
