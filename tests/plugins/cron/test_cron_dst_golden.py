"""The cron trigger across DST changes against fire times recorded from cronsim (see
gen_cron_dst_golden.py): Vixie cron's rule that an hour field starting with ``*`` (``*/2``
included) follows the clock, while ``1-23/2``, ``0-23`` and fixed hours are times of day."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tickwork import next_fire_times

GOLDEN = Path(__file__).with_name("data") / "cron_dst_golden.json"
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text(encoding="utf-8"))["cases"]


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _fires(expression: str, tz: str, after: datetime, until: datetime) -> list[datetime]:
    out: list[datetime] = []
    current = after
    while True:
        [nxt] = next_fire_times(expression, tz=tz, after=current, n=1)
        if nxt > until:
            return out
        out.append(nxt)
        current = nxt


def test_corpus_covers_the_issue_cases() -> None:
    covered = {(c["expression"], c["tz"]) for c in CASES}
    for expression in ("0 */2 * * *", "0 */3 * * *", "0 1-23/2 * * *"):
        for tz in ("Europe/Berlin", "America/New_York"):
            assert (expression, tz) in covered
    # The reference itself fires a starred hour at both 02:00s of Berlin's fall-back night.
    [case] = [
        c
        for c in CASES
        if (c["expression"], c["tz"], c["after"]) == ("0 */2 * * *", "Europe/Berlin", "2026-10-23T22:00:00Z")
    ]
    assert {"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z"} <= set(case["fires"])


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['tz']}:{c['after'][:10]}:{c['expression']!r}")
def test_fires_like_the_reference(case: dict[str, Any]) -> None:
    expected = [_when(t) for t in case["fires"]]
    assert _fires(case["expression"], case["tz"], _when(case["after"]), _when(case["until"])) == expected


def test_a_starred_hour_fires_at_both_repeated_times_and_a_range_once() -> None:
    after = datetime(2026, 10, 24, 22, 0, tzinfo=UTC)  # Berlin, the night of the fall-back
    starred = next_fire_times("0 */2 * * *", tz="Europe/Berlin", after=after, n=2)
    assert starred == [datetime(2026, 10, 25, 0, 0, tzinfo=UTC), datetime(2026, 10, 25, 1, 0, tzinfo=UTC)]
    ranged = next_fire_times("0 0-22/2 * * *", tz="Europe/Berlin", after=after, n=2)
    assert ranged == [datetime(2026, 10, 25, 0, 0, tzinfo=UTC), datetime(2026, 10, 25, 3, 0, tzinfo=UTC)]
