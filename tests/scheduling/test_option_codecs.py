"""Every schedule option carries its JSON codec: written out (the stores' ``options`` column, the
admin API's JSON) and read back (JSON, TOML) it is the same value, odd values included, and a
whole spec survives the column, the admin JSON and the row mapper unchanged."""

from __future__ import annotations

import json
import tomllib
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from tickwork.scheduling.options import BY_NAME, OPTIONS, STORED, spec_json, stored_fields, stored_json
from tickwork.sql.rows import spec_from_row, spec_values
from tickwork.structures import MisfirePolicy, OnAbandon, OnFinish, OnHoliday, Overlap, ScheduleSpec

#: Values of each option as a spec holds them, odd ones included. A new option without any
#: fails test_every_option_has_samples.
SAMPLES: dict[str, list[Any]] = {
    "kind": ["cron", "calendar"],
    "tz": ["UTC", "America/Argentina/Buenos_Aires"],
    "executor": ["local", "http"],
    "args": [{}, {"city": "Tromsø", "nested": {"list": [1, 2.5, None, True], "empty": {}}, "zero": 0}],
    "timeout": [timedelta(microseconds=1), timedelta(minutes=5), timedelta(days=29, hours=23, microseconds=999_999)],
    "retries": [0, 100],
    "retry_backoff": [timedelta(0), timedelta(seconds=1.5), timedelta(days=1)],
    "misfire": [None, *MisfirePolicy],
    "enabled": [True, False],
    "pause_after_failures": [None, 1, 10_000],
    "jitter": [timedelta(0), timedelta(microseconds=7), timedelta(hours=23, minutes=59, seconds=59.999999)],
    "start_at": [None, datetime(2026, 12, 1, 8, 0, 0, 123_456, tzinfo=UTC), datetime(1999, 12, 31, 23, tzinfo=UTC)],
    "end_at": [None, datetime(2038, 1, 19, 3, 14, 7, tzinfo=UTC)],
    "misfire_grace": [None, timedelta(0), timedelta(milliseconds=250), timedelta(days=30)],
    "max_catchup": [None, 0, 10_000],
    "max_runs": [None, 1, 1_000_000_000],
    "on_finish": list(OnFinish),
    "on_abandon": list(OnAbandon),
    "also": [(), ("30 18 * * *",), ("Mon..Fri 09:00", "*-12-25 12:00", "0 0 1 * *")],
    "exclude": [(), ("*-12-25", "Sat,Sun")],
    "overlap": list(Overlap),
    "max_concurrent": [None, 1, 10_000],
    "concurrency_key": [None, "billing", "ключ, ß und 😀"],
    "concurrency_limit": [None, 1, 10_000],
    "holidays": [None, "DE-BE", "US", "company"],
    "on_holiday": list(OnHoliday),
}

BASE = {"name": "every", "trigger_kind": "cron", "expression": "0 3 * * *", "target": "m:f"}


def _every_option_set() -> ScheduleSpec:
    """A spec setting every stored option away from its default (and the others)."""
    return ScheduleSpec(
        **BASE,
        timezone="Europe/Oslo",
        arguments={"a": [1, {"b": None}]},
        timeout=timedelta(seconds=90.5),
        misfire=MisfirePolicy.ALL,
        retries=3,
        retry_backoff=timedelta(seconds=2.25),
        enabled=False,
        pause_after_failures=4,
        jitter=timedelta(seconds=600, microseconds=1),
        start_at=datetime(2026, 12, 1, 9, tzinfo=timezone(timedelta(hours=1))),
        end_at=datetime(2027, 1, 1, tzinfo=UTC),
        misfire_grace=timedelta(minutes=2),
        max_catchup=0,
        max_runs=5,
        on_finish=OnFinish.REMOVE,
        on_abandon=OnAbandon.RERUN,
        also=("30 18 * * *",),
        exclude=("*-12-25", "Sat,Sun"),
        overlap=Overlap.ALLOW,
        max_concurrent=3,
        concurrency_key="billing",
        concurrency_limit=2,
        holidays="DE-BE",
        on_holiday=OnHoliday.NEXT,
    )


def test_every_option_has_samples() -> None:
    assert set(SAMPLES) == {o.name for o in OPTIONS}


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.name)
def test_each_option_round_trips_through_json_and_toml(option: Any) -> None:
    for value in SAMPLES[option.name]:
        dumped = option.dump(value)
        through_json = json.loads(json.dumps(dumped))
        back = option.load(through_json)
        assert back == value, (option.name, value, dumped)
        assert type(back) is type(value), (option.name, value)  # the member, not its text
        if dumped is not None and not isinstance(dumped, dict):  # TOML has no null; a table is written apart
            from_toml = tomllib.loads(f"v = {json.dumps(dumped, ensure_ascii=False)}")["v"]
            assert option.load(from_toml) == value, (option.name, value)
        # Every written value is plain JSON: text, numbers, booleans, lists, objects, null.
        assert json.loads(json.dumps(dumped, allow_nan=False)) == dumped


def test_null_reads_as_the_default() -> None:
    for option in OPTIONS:
        expected = None if option.default is None else option.convert(option.name, option.default)
        assert option.load(None) == expected, option.name


def test_a_whole_spec_survives_the_options_column() -> None:
    spec = _every_option_set()
    column = json.loads(json.dumps(stored_json(spec)))
    assert set(column) == {o.name for o in STORED}
    assert ScheduleSpec(**{**_base_fields(spec), **stored_fields(column)}) == spec
    # A spec setting none of them stores NULL and reads back its defaults.
    plain = ScheduleSpec(**BASE)
    assert stored_json(plain) is None
    assert ScheduleSpec(**{**_base_fields(plain), **stored_fields({})}) == plain
    # A key no option has (written by a newer tickwork) is passed over.
    assert stored_fields({**column, "future_option": 1}) == stored_fields(column)


def test_a_whole_spec_survives_the_admin_json() -> None:
    spec = _every_option_set()
    written = json.loads(json.dumps(spec_json(spec)))
    assert list(written) == [o.name for o in STORED]  # every one, in the table's order
    read = {BY_NAME[name].field: BY_NAME[name].load(value) for name, value in written.items()}
    assert ScheduleSpec(**{**_base_fields(spec), **read}) == spec
    unset = spec_json(ScheduleSpec(**BASE))
    assert unset["start_at"] is None and unset["jitter"] == 0.0 and unset["also"] == [] and unset["overlap"] == "skip"


@pytest.mark.parametrize("as_text", [False, True], ids=["decoded", "claim-text"])
def test_the_row_mapper_gives_back_the_same_spec(as_text: bool) -> None:
    for spec in (_every_option_set(), ScheduleSpec(**BASE)):
        row = spec_values(spec)
        if as_text:  # a claim reads the JSON columns as text (sql/claims/base.py)
            row = {**row, "arguments": json.dumps(row["arguments"]), "options": json.dumps(row["options"])}
        back = spec_from_row(row)
        assert back == spec
        assert type(back.overlap) is Overlap and type(back.on_finish) is OnFinish


def _base_fields(spec: ScheduleSpec) -> dict[str, Any]:
    stored = {o.field for o in STORED}
    return {f: getattr(spec, f) for f in spec.__dataclass_fields__ if f not in stored}
