"""The one ISO 8601 formatter and parser (tickwork.structures.iso_z / parse_iso) that the JSON
output, the JSON logs, the web UI's query strings and the plugins share."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from tickwork.structures import iso_z, parse_iso

PARIS_SUMMER = timezone(timedelta(hours=2))


@pytest.mark.parametrize(
    ("value", "timespec", "text"),
    [
        (datetime(2026, 12, 1, 10, 0, tzinfo=UTC), "auto", "2026-12-01T10:00:00Z"),
        (datetime(2026, 7, 1, 12, 30, tzinfo=PARIS_SUMMER), "auto", "2026-07-01T10:30:00Z"),
        (datetime(2026, 12, 1, 10, 0, 0, 250_000, tzinfo=UTC), "auto", "2026-12-01T10:00:00.250000Z"),
        (datetime(2026, 12, 1, 10, 0, 0, 250_000, tzinfo=UTC), "milliseconds", "2026-12-01T10:00:00.250Z"),
        (None, "auto", None),
    ],
)
def test_iso_z_writes_utc_with_a_trailing_z(value: datetime | None, timespec: str, text: str | None) -> None:
    assert iso_z(value, timespec) == text


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-01T10:00:00Z",
        "2026-12-01T10:00:00z",
        " 2026-12-01T10:00:00+00:00 ",
        "2026-12-01T10:00",
        "2026-12-01T12:00+02:00",
    ],
)
def test_parse_iso_reads_z_offsets_and_naive_times_as_utc(text: str) -> None:
    value = parse_iso(text)
    assert value == datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    assert iso_z(parse_iso(iso_z(value))) == iso_z(value)


def test_parse_iso_rejects_what_is_not_a_time() -> None:
    with pytest.raises(ValueError):
        parse_iso("yesterday")
