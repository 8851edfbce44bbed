"""CalendarTrigger against the golden corpus recorded from systemd 252 (see gen_calendar_golden.py).

Every case checks what systemd said: rejected, or the normalized form plus the elapses from a few
base times (to the microsecond where the corpus has them), and "never" where systemd stops.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tickwork.errors import TriggerError
from tickwork_calendar import CalendarTrigger

GOLDEN = Path(__file__).with_name("data") / "calendar_golden.json"
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text(encoding="utf-8"))["cases"]


def _when(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def _case_id(case: dict[str, Any]) -> str:
    return f"{case['group']}:{case['tz']}:{case['expression']!r}"


def test_corpus_is_large_and_varied() -> None:
    groups = {case["group"] for case in CASES}
    assert len(CASES) >= 500
    assert {"systemd-tests", "dst", "fraction", "month-end", "leap-year", "impossible", "rejected"} <= groups
    assert sum(1 for case in CASES if case.get("rejected")) >= 100


@pytest.mark.parametrize("case", [c for c in CASES if c.get("rejected")], ids=_case_id)
def test_rejected_like_systemd(case: dict[str, Any]) -> None:
    with pytest.raises(TriggerError):
        CalendarTrigger(case["expression"], case["tz"])


@pytest.mark.parametrize("case", [c for c in CASES if not c.get("rejected")], ids=_case_id)
def test_matches_systemd(case: dict[str, Any]) -> None:
    trigger = CalendarTrigger(case["expression"], case["tz"])
    assert trigger.normalized() == case["normalized"]
    for run in case["runs"]:
        moment: datetime | None = _when(run["base"])
        got: list[datetime] = []
        for _ in run["elapses"]:
            assert moment is not None
            moment = trigger.next_after(moment)
            if moment is None:
                break
            got.append(moment)
        expected = [_when(text) for text in run["elapses"]]
        if run["precision"] == "s":
            got = [g.replace(microsecond=0) for g in got]
        assert got == expected, f"from {run['base']}"
        last = expected[-1] if expected else _when(run["base"])
        if run["end"] == "never":
            assert trigger.next_after(last) is None, f"systemd never elapses after {last}"
        elif run["end"] == "error":
            # systemd's own search gives up here; tickwork answers with the wall-clock match.
            fallback = trigger.next_after(last)
            assert fallback is not None and fallback > last
            assert fallback - last < timedelta(days=366)
