"""A first sync's shared work (issue #42 §4): the first versions of new schedules built once per
shape of definition, and first fires computed once per trigger and clock reading, give what the
unshared path gives for every spec."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

from tickwork.scheduling.sync import first_fire, first_fires
from tickwork.scheduling.versions import FirstVersions, changes, definition
from tickwork.sql.jsontext import Encoded, dumps
from tickwork.structures import MisfirePolicy, Overlap, ScheduleSpec


def spec(name: str, **fields: object) -> ScheduleSpec:
    values: dict[str, object] = {"name": name, "trigger_kind": "cron", "expression": "0 0 1 1 *"}
    values["target"] = f"jobs:{name}"
    values.update(fields)
    return ScheduleSpec(**values)  # type: ignore[arg-type]


def unshared(s: ScheduleSpec) -> tuple[str, str]:
    new = definition(s)
    return json.dumps(changes(None, new)), json.dumps(new)


SPECS = [
    spec("a"),
    spec("b"),  # a's shape, another target
    spec("c", target='jobs:"quoted" \\ ünïcode ✓'),  # escapes and ensure_ascii in the joined target
    spec("d", retries=2, timeout=timedelta(seconds=7)),
    spec("e", retries=2, timeout=timedelta(seconds=7)),
    spec("f", retries=1),
    spec("h", arguments={"x": 1}),  # arguments: not shared
    spec("i", arguments={"x": True}),
    spec("j", start_at=datetime(2027, 1, 1, 12, tzinfo=UTC), misfire=MisfirePolicy.ALL),
    spec("k", start_at=datetime(2027, 1, 1, 13, tzinfo=timezone(timedelta(hours=1))), misfire=MisfirePolicy.ALL),
    spec("l", also=("0 12 * * *",), exclude=("Sat,Sun",), overlap=Overlap.ALLOW, max_concurrent=3),
    spec("m", expression="*/5 * * * *", timezone="Europe/Berlin", executor="http"),
    spec("n", also=["0 12 * * *"]),  # a list where a tuple belongs: unhashable, not shared
]


def test_first_versions_are_the_json_the_unshared_path_writes() -> None:
    first = FirstVersions()
    for s in [*SPECS, *reversed(SPECS)]:  # each shape met first and again
        assert first.texts(s) == unshared(s), s.name


def test_the_stores_serializer_writes_encoded_json_as_it_is() -> None:
    assert dumps(Encoded('{"a": 1}')) == '{"a": 1}'
    assert dumps({"a": [1, None]}) == json.dumps({"a": [1, None]})
    assert dumps("text") == '"text"'


def test_first_fires_shared_per_trigger_are_each_specs_own() -> None:
    now = datetime(2026, 11, 29, 12, 0, 0, 500_000, tzinfo=UTC)
    later = now + timedelta(minutes=7)
    specs = [
        spec("p", expression="*/5 * * * *"),
        spec("q", expression="*/5 * * * *"),
        spec("r", expression="*/5 * * * *", timezone="Asia/Kolkata"),
        # The same trigger and jitter: each offset comes from the name.
        *(spec(f"jittered-{i}", expression="*/5 * * * *", jitter=timedelta(minutes=4)) for i in range(8)),
        spec("bounded", expression="*/5 * * * *", start_at=now + timedelta(hours=1)),
        spec("off", expression="*/5 * * * *", enabled=False),
    ]
    next_fire = first_fires(None)
    for at in (now, later, now):
        got = [next_fire(s, at) for s in specs]
        assert got == [first_fire(s, at) if s.enabled else None for s in specs]
    jittered = {next_fire(s, now) for s in specs if s.jitter}
    assert len(jittered) > 1  # the names gave different offsets, not one shared fire


def test_first_fires_shared_still_end_a_finished_schedule() -> None:
    done = spec("done", expression="*/5 * * * *", max_runs=3)
    fresh = spec("fresh", expression="*/5 * * * *", max_runs=3)
    next_fire = first_fires(None, {done.key: 3})
    now = datetime(2026, 11, 29, 12, tzinfo=UTC)
    assert next_fire(fresh, now) == first_fire(fresh, now)
    assert next_fire(done, now) is None


def test_a_template_joins_to_the_text_of_each_plain_target() -> None:
    first = FirstVersions()
    plain = [s for s in SPECS if not s.arguments and s.name != "c"]
    for s in plain:
        template = first.template(s)
        assert template is not None, s.name
        assert template.texts(s.target) == unshared(s), s.name
    # One object per shape: the store writes one statement per shape and batch.
    assert first.template(SPECS[0]) is first.template(SPECS[1])
    assert first.template(SPECS[0]) is not first.template(SPECS[3])


def test_no_template_where_the_target_must_be_escaped_or_the_version_is_not_shared() -> None:
    first = FirstVersions()
    assert first.template(spec("c", target='jobs:"quoted" \\ ünïcode ✓')) is None
    assert first.template(spec("u", target="jobs:ünïcode")) is None  # json.dumps writes \u escapes
    assert first.template(spec("h", arguments={"x": 1})) is None
