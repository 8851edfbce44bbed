"""``overlap``, ``on_finish`` and ``on_abandon`` are enums with their behaviour on them: what each
choice does is asked of the member, a spec given text holds the member, a bad value is refused
listing the choices, and the database keeps the same text as before (no migration)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

import tickwork
from tickwork.errors import ConfigError
from tickwork.scheduling.options import BY_NAME
from tickwork.sql.schema import schedules
from tickwork.sql.store import SQLStore
from tickwork.structures import (
    BACKFILL_OVERLAP,
    OnAbandon,
    OnFinish,
    Overlap,
    ScheduleSpec,
    backfill_takeable,
)

RECORD = "tests.support.jobs_for_tests:record"

#: Each choice's answers, written out by hand: (runs_beside, planned, keeps_every, cancels).
OVERLAP_BEHAVIOUR = {
    Overlap.SKIP: (False, False, False, False),
    Overlap.BUFFER_ONE: (False, True, False, False),
    Overlap.BUFFER_ALL: (False, True, True, False),
    Overlap.CANCEL_OTHER: (False, True, False, True),
    Overlap.ALLOW: (True, False, False, False),
}


def _spec(**fields: object) -> ScheduleSpec:
    return ScheduleSpec("a", "cron", "* * * * *", "m:f", **fields)  # type: ignore[arg-type]


def test_each_overlap_choice_answers_for_itself() -> None:
    assert set(OVERLAP_BEHAVIOUR) == set(Overlap)
    for member, expected in OVERLAP_BEHAVIOUR.items():
        assert (member.runs_beside, member.planned, member.keeps_every, member.cancels) == expected, member


def test_on_finish_and_on_abandon_answer_for_themselves() -> None:
    assert [m.removes for m in OnFinish] == [False, True]
    assert [m.reruns for m in OnAbandon] == [False, True]
    # The values are the words users write and the database keeps.
    assert OnFinish.choices() == ("keep", "remove")
    assert OnAbandon.choices() == ("skip", "rerun")
    assert Overlap.choices() == ("skip", "buffer_one", "buffer_all", "cancel_other", "allow")


@pytest.mark.parametrize(
    ("field", "text", "member"),
    [
        ("overlap", "cancel_other", Overlap.CANCEL_OTHER),
        ("on_finish", "remove", OnFinish.REMOVE),
        ("on_abandon", "rerun", OnAbandon.RERUN),
    ],
)
def test_a_spec_given_text_holds_the_member(field: str, text: str, member: object) -> None:
    assert getattr(_spec(**{field: text}), field) is member
    assert getattr(_spec(**{field: member}), field) is member
    assert _spec(**{field: text}) == _spec(**{field: member})
    # A string enum: the text still compares equal, for users' code that compares it.
    assert getattr(_spec(**{field: text}), field) == text


def test_the_defaults_are_members() -> None:
    spec = _spec()
    assert (spec.overlap, spec.on_finish, spec.on_abandon) == (Overlap.SKIP, OnFinish.KEEP, OnAbandon.SKIP)
    assert type(spec.overlap) is Overlap and type(spec.on_finish) is OnFinish and type(spec.on_abandon) is OnAbandon


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"overlap": "replace"}, "overlap: one of skip, buffer_one, buffer_all, cancel_other, allow, got 'replace'"),
        ({"on_finish": "delete"}, "on_finish: one of keep, remove, got 'delete'"),
        ({"on_abandon": "retry"}, "on_abandon: one of skip, rerun, got 'retry'"),
        # Not text at all, nor the member of another enum's value that is no choice here.
        ({"overlap": 1}, "overlap: one of skip, buffer_one, buffer_all, cancel_other, allow, got 1"),
        ({"on_finish": None}, "on_finish: one of keep, remove, got None"),
        ({"on_abandon": Overlap.ALLOW}, "on_abandon: one of skip, rerun, got <Overlap.ALLOW: 'allow'>"),
    ],
)
def test_a_bad_choice_is_refused_listing_the_choices(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as refused:
        _spec(**fields)
    assert str(refused.value) == message


def test_the_options_read_text_as_the_member_and_refuse_with_the_same_words() -> None:
    assert BY_NAME["overlap"].convert("overlap", "allow") is Overlap.ALLOW
    assert BY_NAME["on_finish"].convert("on_finish", OnFinish.REMOVE) is OnFinish.REMOVE
    with pytest.raises(ConfigError, match=r"^on_abandon: one of skip, rerun, got 'never'$"):
        BY_NAME["on_abandon"].convert("on_abandon", "never")


def test_admin_add_refuses_a_bad_overlap_with_the_choices(sqlite_project: Path) -> None:
    with tickwork.connect() as admin, pytest.raises(ConfigError, match="overlap: one of skip, buffer_one"):
        admin.add("x", "0 3 * * *", RECORD, overlap="sometimes")


def test_the_database_keeps_the_text_and_gives_back_the_members(sqlite_store: SQLStore) -> None:
    spec = _spec(overlap="buffer_all", on_finish="remove", on_abandon="rerun", max_runs=2)
    sqlite_store.add(spec, None)
    with sqlite_store.engine.connect() as conn:
        stored = conn.execute(select(schedules.c.options).where(schedules.c.name == "a")).scalar_one()
    stored = json.loads(stored) if isinstance(stored, str) else stored
    assert stored == {"max_runs": 2, "on_finish": "remove", "on_abandon": "rerun", "overlap": "buffer_all"}
    back = sqlite_store.get("a").spec
    assert (back.overlap, back.on_finish, back.on_abandon) == (Overlap.BUFFER_ALL, OnFinish.REMOVE, OnAbandon.RERUN)
    assert type(back.overlap) is Overlap and type(back.on_finish) is OnFinish and type(back.on_abandon) is OnAbandon
    assert back == spec


def test_backfill_fires_still_take_their_overlap_as_stored_text() -> None:
    assert BACKFILL_OVERLAP == ("buffer_all", "allow")
    assert backfill_takeable(["allow", "allow", "buffer_all"], running=0, max_concurrent=None) == 2
    assert backfill_takeable(["allow", "allow"], running=1, max_concurrent=2) == 1
    assert backfill_takeable(["buffer_all", "buffer_all"], running=0, max_concurrent=None) == 1
    assert backfill_takeable(["buffer_all"], running=1, max_concurrent=None) == 0


@pytest.mark.parametrize(
    ("fields", "held"),
    [
        ({"on_finish": "keep"}, {"on_finish": OnFinish.KEEP}),
        ({"on_abandon": "skip"}, {"on_abandon": OnAbandon.SKIP}),
        ({"overlap": "skip"}, {"overlap": Overlap.SKIP}),
        ({"also": [], "exclude": []}, {"also": (), "exclude": ()}),
    ],
)
def test_options_given_at_their_default_as_text_or_a_list_are_still_held_as_members_and_tuples(
    fields: dict[str, object], held: dict[str, object]
) -> None:
    # A spec whose options are all at their defaults skips their checks (a declaration's cost);
    # text or a list equal to a default is not that default and is still converted.
    spec = _spec(**fields)
    for name, value in held.items():
        got = getattr(spec, name)
        assert got == value and type(got) is type(value), name


@pytest.mark.parametrize("fields", [{"jitter": 0}, {"namespace": "no spaces"}, {"namespace": ""}])
def test_a_value_of_the_wrong_type_at_a_defaults_place_is_still_refused(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        _spec(**fields)
