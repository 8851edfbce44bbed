"""What the MySQL store adds to the contract: its URL rules, and change notification by polling
(another process's change wakes a listening node)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event

from tickwork.errors import ConfigError
from tickwork.structures import Finish, Outcome, RunStatus, ScheduleSpec
from tickwork_mysql.store import MySQLStore, earlier_or_new, sqlalchemy_url


def spec(name: str) -> ScheduleSpec:
    return ScheduleSpec(name=name, trigger_kind="cron", expression="* * * * *", target="m:f")


def test_urls_pin_pymysql_and_utf8mb4() -> None:
    assert sqlalchemy_url("mysql://u:p@db:3307/tw") == "mysql+pymysql://u:p@db:3307/tw?charset=utf8mb4"
    assert sqlalchemy_url("mariadb://u@db/tw").startswith("mysql+pymysql://u@db/tw")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", 'url: required, e.g. "mysql://user:password@host:3306/dbname"'),
        ("postgresql://u@h/db", "url: expected a mysql:// URL, got 'postgresql'://"),
        ("mysql://u:s3cret@h:port/db", "url: the port of the database URL is not a number"),
        ("mysql://u@h:3306", "url: name the database"),
    ],
)
def test_bad_urls_are_named_without_their_secrets(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        MySQLStore(url)
    assert "s3cret" not in str(info.value)


def test_advisory_is_not_offered() -> None:
    with pytest.raises(ConfigError, match="'advisory' is not supported by the mysql store"):
        MySQLStore("mysql://u@h/db", claim="advisory")


@pytest.fixture
def listening_and_writer(mysql_url: str) -> Iterator[tuple[MySQLStore, MySQLStore]]:
    """A store that polls for changes every 0.05 s, and another process's store writing them."""
    listening, writer = MySQLStore(mysql_url, poll_interval=0.05), MySQLStore(mysql_url)
    listening.upgrade()
    listening.open()
    writer.open()
    yield listening, writer
    listening.close()
    writer.close()


def test_another_process_adding_or_firing_a_schedule_wakes_a_listener(
    listening_and_writer: tuple[MySQLStore, MySQLStore],
) -> None:
    listening, writer = listening_and_writer
    woken = threading.Event()
    writer.add(spec("later"), writer.now() + timedelta(days=1))
    listening.listen(woken.set)
    writer.add(spec("new"), writer.now() + timedelta(days=2))
    assert woken.wait(30), "an added schedule did not wake the listener"
    woken.clear()
    writer.fire_now("later")
    assert woken.wait(30), "a schedule made due now did not wake the listener"


def test_a_claim_that_makes_the_earliest_fire_later_wakes_nobody(
    listening_and_writer: tuple[MySQLStore, MySQLStore],
) -> None:
    """In a cluster at work every claim moves the earliest claimable fire later; a node told of
    each would read its next due time after every poll for nothing."""
    listening, writer = listening_and_writer
    woken = threading.Event()
    now = writer.now()
    writer.add(spec("due"), now - timedelta(seconds=1))
    writer.add(spec("tomorrow"), now + timedelta(days=1))
    listening.listen(woken.set)
    (claim,) = writer.claim_due("other", limit=10, buckets=None)
    assert claim.spec.name == "due"
    assert not woken.wait(1.0), "a claim (the earliest fire moved later) woke the listener"
    writer.unclaim("other", [claim])  # given back: due again, earlier than tomorrow
    assert woken.wait(30), "a fire given back did not wake the listener"


@pytest.mark.parametrize(
    ("last", "current", "wake"),
    [
        ((5, 100), (6, 100), True),  # a new schedule
        ((5, 100), (5, 90), True),  # an earlier fire
        ((5, None), (5, 90), True),  # a claimable fire where there was none
        ((None, None), (1, None), True),  # the first schedule (disabled)
        ((5, 100), (5, 110), False),  # claimed: the earliest moved later
        ((5, 100), (5, None), False),  # the last one claimed
        ((5, 100), (4, 100), False),  # the newest removed
    ],
)
def test_what_the_change_poll_wakes_for(last: Any, current: Any, wake: bool) -> None:
    assert earlier_or_new(last, current) is wake


def test_unique_fire_takes_only_the_schedule_version_it_read(mysql_url: str) -> None:
    """Another node claims and ends the fire between this claim's read of its candidates and its
    writes, releasing the schedule to a next fire that is already due: this claim must take
    nothing, and above all write no run row for a fire it never took (that row would fence the
    fire out for its real claimer: a lost fire)."""
    slow, other = MySQLStore(mysql_url, claim="unique-fire"), MySQLStore(mysql_url, claim="unique-fire")
    slow.upgrade()
    slow.open()
    other.open()
    try:
        other.add(spec("raced"), other.now() - timedelta(seconds=5))
        interleaved: list[int] = []

        def after_candidates(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
            if interleaved or "LIMIT" not in statement or not statement.lstrip().upper().startswith("SELECT"):
                return
            (claim,) = other.claim_due("other", limit=1, buckets=None)
            next_fire = claim.scheduled_for + timedelta(seconds=1)  # still in the past: due again
            other.finish("other", [Finish(claim, Outcome(RunStatus.SUCCEEDED), next_fire)])
            interleaved.append(claim.schedule_id)

        event.listen(slow.engine, "after_cursor_execute", after_candidates)
        assert slow.claim_due("slow", limit=1, buckets=None) == []
        assert interleaved, "the race was not staged"
        assert [(r.node, r.status) for r in slow.history(schedule="raced")] == [("other", RunStatus.SUCCEEDED)]
        (claim,) = other.claim_due("other", limit=1, buckets=None)  # the next fire is still there to take
        assert claim.run_id is not None
    finally:
        slow.close()
        other.close()
