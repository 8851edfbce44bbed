"""The Store contract: every backend and every claim strategy it supports keeps the invariants
of docs/claim-protocol.md. Runs on a fake clock (the store's ``clock`` stands in for the database's)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tests.conftest import T0, FakeClock
from tickwork.errors import ScheduleExistsError, ScheduleNotFoundError
from tickwork.sql.store import SQLStore
from tickwork.structures import Claim, Finish, MisfirePolicy, Outcome, RunStatus, ScheduleSpec, ScheduleState, bucket_of

OK = Outcome(RunStatus.SUCCEEDED)


def spec(name: str = "job", **kw: object) -> ScheduleSpec:
    values: dict[str, object] = {
        "name": name,
        "trigger_kind": "cron",
        "expression": "* * * * *",
        "target": "mod:func",
    }
    values.update(kw)
    return ScheduleSpec(**values)  # type: ignore[arg-type]


def claim_all(store: SQLStore, node: str = "n1", buckets: list[int] | None = None) -> list[Claim]:
    return store.claim_due(node, limit=1000, buckets=buckets)


def finish(store: SQLStore, claim: Claim, next_fire: datetime | None, node: str = "n1", **kw: object) -> bool:
    outcome = kw.pop("outcome", OK)
    return store.finish(node, [Finish(claim, outcome, next_fire, **kw)])[0]  # type: ignore[arg-type]


# -- schedules -------------------------------------------------------------------------------------


def test_add_get_list_remove(store: SQLStore) -> None:
    added = store.add(spec("b", arguments={"x": [1, 2]}, timezone="Europe/Berlin"), T0)
    store.add(spec("a", module="app.jobs", misfire=MisfirePolicy.ALL, retries=2), None)
    assert added.spec.arguments == {"x": [1, 2]}
    assert added.next_fire == T0 and added.state is ScheduleState.IDLE
    got = store.get("b")
    assert got.spec == added.spec and got.id == added.id
    assert [s.name for s in store.list_schedules()] == ["a", "b"]
    assert [s.name for s in store.list_schedules(module="app.jobs")] == ["a"]
    assert store.get("a").spec.misfire is MisfirePolicy.ALL and store.get("a").spec.retries == 2
    store.remove("a")
    assert [s.name for s in store.list_schedules()] == ["b"]


def test_duplicate_and_missing_names(store: SQLStore) -> None:
    store.add(spec("a"), T0)
    with pytest.raises(ScheduleExistsError, match="'a'"):
        store.add(spec("a"), T0)
    for call in (
        lambda: store.get("nope"),
        lambda: store.remove("nope"),
        lambda: store.set_enabled("nope", True, T0),
        lambda: store.fire_now("nope"),
        lambda: store.update(spec("nope"), T0),
    ):
        with pytest.raises(ScheduleNotFoundError, match="'nope'"):
            call()


def test_update_replaces_definition(store: SQLStore) -> None:
    store.add(spec("a"), T0)
    updated = store.update(spec("a", expression="*/5 * * * *", timeout=timedelta(seconds=7)), T0 + timedelta(hours=1))
    assert updated.spec.expression == "*/5 * * * *"
    assert updated.spec.timeout == timedelta(seconds=7)
    assert updated.next_fire == T0 + timedelta(hours=1)


def test_database_clock_is_used(store: SQLStore, clock: FakeClock) -> None:
    assert store.now() == T0
    clock.advance(5)
    assert store.now() == T0 + timedelta(seconds=5)


# -- claiming ----------------------------------------------------------------------------------------


def test_never_claims_before_due(store: SQLStore, clock: FakeClock) -> None:
    store.add(spec("a"), T0 + timedelta(seconds=10))
    assert claim_all(store) == []
    clock.advance(9.999)
    assert claim_all(store) == []
    clock.advance(0.001)  # due exactly now
    claims = claim_all(store)
    assert [c.spec.name for c in claims] == ["a"]
    assert claims[0].scheduled_for == T0 + timedelta(seconds=10)
    assert claims[0].claimed_at == T0 + timedelta(seconds=10)
    assert claims[0].run_id is not None


def test_claim_ahead_takes_only_what_is_due_within_the_window(store: SQLStore, clock: FakeClock) -> None:
    store.add(spec("soon"), T0 + timedelta(seconds=3))
    store.add(spec("later"), T0 + timedelta(seconds=10))
    assert store.claim_due("n1", limit=10, buckets=None, ahead=2.5) == []
    (c,) = store.claim_due("n1", limit=10, buckets=None, ahead=3)
    assert c.spec.name == "soon" and c.early and c.claimed_at == T0
    assert c.scheduled_for == T0 + timedelta(seconds=3) and c.run_id is not None
    assert store.get("soon").state is ScheduleState.RUNNING
    (run,) = store.history()
    assert run.status is RunStatus.RUNNING and run.started_at is None  # not started yet
    assert claim_all(store, "n2") == []  # held like any claim
    # The engine reports when it actually started the run.
    clock.advance(3)
    assert finish(store, c, T0 + timedelta(minutes=1), started_at=T0 + timedelta(seconds=3.001))
    (run,) = store.history()
    assert run.status is RunStatus.SUCCEEDED and run.started_at == T0 + timedelta(seconds=3.001)


def test_a_claim_made_when_due_records_its_start_unless_the_end_says_otherwise(store: SQLStore) -> None:
    store.add(spec("a"), T0)
    (c,) = claim_all(store)
    assert not c.early
    assert finish(store, c, T0 + timedelta(minutes=1))
    (run,) = store.history()
    assert run.started_at == T0


def test_unclaim_gives_back_early_claims_as_if_never_made(store: SQLStore, clock: FakeClock) -> None:
    store.add(spec("a"), T0 + timedelta(seconds=5))
    store.add(spec("b"), T0 + timedelta(seconds=5))
    claims = store.claim_due("n1", limit=10, buckets=None, ahead=10)
    assert len(claims) == 2
    assert store.unclaim("n1", claims) == 2
    for name in ("a", "b"):
        s = store.get(name)
        assert s.state is ScheduleState.IDLE and s.claimed_by is None
        assert s.next_fire == T0 + timedelta(seconds=5)
    assert store.history() == []
    clock.advance(5)
    again = claim_all(store, "n2")
    assert sorted(c.spec.name for c in again) == ["a", "b"]
    assert all(c.run_id is not None for c in again)  # the fire is not "already recorded"
    # Fenced: a stale claim gives back nothing and leaves the new holder alone.
    assert store.unclaim("n1", claims) == 0
    assert all(store.get(n).claimed_by == "n2" for n in ("a", "b"))
    assert len(store.history()) == 2


def test_claim_marks_running_and_is_exclusive(store: SQLStore) -> None:
    store.add(spec("a"), T0)
    (c,) = claim_all(store, "n1")
    s = store.get("a")
    assert s.state is ScheduleState.RUNNING and s.claimed_by == "n1" and s.claim_seq == c.claim_seq
    assert claim_all(store, "n2") == []
    (run,) = store.history()
    assert run.status is RunStatus.RUNNING and run.node == "n1" and run.scheduled_for == T0


def test_disabled_and_never_firing_are_not_claimed(store: SQLStore) -> None:
    store.add(spec("off", enabled=False), T0)
    store.add(spec("never"), None)
    store.add(spec("on"), T0)
    store.set_enabled("on", False, T0)
    assert claim_all(store) == []
    store.set_enabled("on", True, T0)
    assert [c.spec.name for c in claim_all(store)] == ["on"]


def test_claims_earliest_first_and_honours_limit(store: SQLStore) -> None:
    for i in range(5):
        store.add(spec(f"s{i}"), T0 - timedelta(seconds=i))
    claims = store.claim_due("n1", limit=2, buckets=None)
    assert [c.spec.name for c in claims] == ["s4", "s3"]
    assert {c.spec.name for c in claim_all(store)} == {"s2", "s1", "s0"}


def test_bucket_filter(store: SQLStore) -> None:
    names = [f"job-{i}" for i in range(20)]
    for name in names:
        store.add(spec(name), T0)
    mine = sorted({bucket_of(n) for n in names[:7]})
    claims = claim_all(store, buckets=mine)
    assert {c.spec.name for c in claims} == {n for n in names if bucket_of(n) in mine}
    assert store.next_due(buckets=mine) is None
    assert store.next_due(buckets=None) == T0


def test_finish_releases_with_next_fire_and_records_outcome(store: SQLStore, clock: FakeClock) -> None:
    store.add(spec("a"), T0)
    (c,) = claim_all(store)
    clock.advance(2)
    assert finish(store, c, T0 + timedelta(minutes=1), outcome=Outcome(RunStatus.FAILED, error="boom"))
    s = store.get("a")
    assert s.state is ScheduleState.IDLE and s.claimed_by is None and s.next_fire == T0 + timedelta(minutes=1)
    (run,) = store.history()
    assert run.status is RunStatus.FAILED and run.error == "boom"
    assert run.finished_at == T0 + timedelta(seconds=2)
    assert store.next_due(buckets=None) == T0 + timedelta(minutes=1)


def test_skipped_fire_times_are_recorded(store: SQLStore) -> None:
    store.add(spec("a"), T0)
    (c,) = claim_all(store)
    times = (T0 + timedelta(minutes=1), T0 + timedelta(minutes=2))
    assert finish(store, c, T0 + timedelta(minutes=3), skipped=tuple((t, "still active") for t in times))
    runs = sorted(store.history(), key=lambda r: r.scheduled_for)
    assert [r.status for r in runs] == [RunStatus.SUCCEEDED, RunStatus.SKIPPED, RunStatus.SKIPPED]
    assert [r.scheduled_for for r in runs[1:]] == list(times)
    assert all("still active" in (r.error or "") for r in runs[1:])


def test_fenced_end_after_takeover_changes_nothing_else(store: SQLStore, clock: FakeClock) -> None:
    """FTL's EndCronJob fence: a late finisher whose claim was taken over only notes its run."""
    store.add(spec("a"), T0)
    (old,) = claim_all(store, "n1")
    assert store.release_node("n1", "n1 declared dead") == 1
    assert store.get("a").state is ScheduleState.IDLE
    # The schedule is due again at the same time: its run is already recorded, so the new claim
    # comes without a run (the engine advances it without running the fire a second time).
    (again,) = claim_all(store, "n2")
    assert again.run_id is None and again.claim_seq == old.claim_seq + 1
    assert finish(store, again, T0 + timedelta(minutes=1), node="n2")
    assert claim_all(store, "n2") == []  # nothing due until the next minute
    assert not finish(store, old, T0 + timedelta(hours=5), node="n1")
    s = store.get("a")
    assert s.next_fire == T0 + timedelta(minutes=1) and s.state is ScheduleState.IDLE
    (run,) = store.history()
    assert run.status is RunStatus.ABANDONED
    assert "taken over" in (run.error or "")


def test_duplicate_fire_is_impossible_to_record(store: SQLStore) -> None:
    """Invariant 1 lives in the schema: a second first attempt for a fire time is refused."""
    store.add(spec("a"), T0)
    claim_all(store)
    store.release_node("n1", "test")
    store.set_enabled("a", True, T0)  # due again at the very same time
    (dup,) = claim_all(store, "n2")
    assert dup.run_id is None
    assert len(store.history()) == 1


def test_fire_now(store: SQLStore, clock: FakeClock) -> None:
    store.add(spec("a"), T0 + timedelta(days=1))
    clock.advance(30)
    assert store.fire_now("a").next_fire == T0 + timedelta(seconds=30)
    (c,) = claim_all(store)
    assert c.scheduled_for == T0 + timedelta(seconds=30)


def test_release_node_abandons_its_runs_only(store: SQLStore) -> None:
    store.add(spec("a"), T0)
    store.add(spec("b"), T0)
    (ca,) = store.claim_due("n1", limit=1, buckets=None)
    (cb,) = store.claim_due("n2", limit=1, buckets=None)
    assert store.release_node("n1", "restarted") == 1
    by_name = {r.schedule: r for r in store.history()}
    assert by_name[ca.spec.name].status is RunStatus.ABANDONED and by_name[ca.spec.name].error == "restarted"
    assert by_name[cb.spec.name].status is RunStatus.RUNNING
    assert store.get(cb.spec.name).state is ScheduleState.RUNNING


def test_hard_timeout_reaps_and_renew_keeps_alive(store: SQLStore, clock: FakeClock) -> None:
    store.add(spec("slow", timeout=timedelta(seconds=10)), T0)
    store.add(spec("kept", timeout=timedelta(seconds=10)), T0)
    claims = claim_all(store)
    clock.advance(14)
    store.renew("n1", [c for c in claims if c.spec.name == "kept"])
    assert store.reap_expired(5) == 0  # 14s < 10s timeout + 5s grace
    clock.advance(2)
    assert store.reap_expired(5) == 1
    assert store.get("slow").state is ScheduleState.IDLE
    assert store.get("kept").state is ScheduleState.RUNNING
    by_name = {r.schedule: r for r in store.history()}
    assert by_name["slow"].status is RunStatus.TIMED_OUT
    assert by_name["kept"].status is RunStatus.RUNNING


def test_nodes_and_heartbeats(store: SQLStore, clock: FakeClock) -> None:
    first = store.heartbeat("n1")
    clock.advance(3)
    assert store.heartbeat("n1") == first + timedelta(seconds=3)
    store.heartbeat("n2")
    infos = {n.id: n for n in store.nodes()}
    assert infos["n1"].started_at == first and infos["n1"].heartbeat_at == first + timedelta(seconds=3)
    store.remove_node("n1")
    assert [n.id for n in store.nodes()] == ["n2"]


def test_history_newest_first_with_filter_and_limit(store: SQLStore, clock: FakeClock) -> None:
    store.add(spec("a"), T0)
    store.add(spec("b"), T0)
    for _ in range(3):
        for c in claim_all(store):
            finish(store, c, clock.advance(60))
    hist = store.history(limit=4)
    assert len(hist) == 4 and [r.id for r in hist] == sorted((r.id for r in hist), reverse=True)
    assert {r.schedule for r in store.history(schedule="a")} == {"a"}
    as_json = hist[0].as_json()
    for key in ("schedule", "scheduled_for", "started_at", "finished_at", "status", "node", "error"):
        assert key in as_json
    assert as_json["scheduled_for"].endswith("Z")


def test_prune_history_keeps_recent_and_running(store: SQLStore, clock: FakeClock) -> None:
    store.add(spec("a"), T0)
    (c,) = claim_all(store)
    finish(store, c, T0 + timedelta(days=1))
    clock.set(T0 + timedelta(days=1))
    claim_all(store)  # a running run stays
    clock.set(T0 + timedelta(days=40))
    assert store.prune_history(timedelta(days=30)) == 1
    assert [r.status for r in store.history()] == [RunStatus.RUNNING]


def test_remove_deletes_history(store: SQLStore) -> None:
    store.add(spec("a"), T0)
    (c,) = claim_all(store)
    finish(store, c, None)
    store.remove("a")
    assert store.history() == []


# -- faults contained (docs/architecture.md#faults) ---------------------------------------------------


def test_a_trigger_changed_during_a_run_keeps_the_next_fire_it_set(store: SQLStore, clock: FakeClock) -> None:
    store.add(spec("a"), T0)
    store.add(spec("b"), T0)
    ca, cb = claim_all(store)
    store.update(spec("a", expression="0 * * * *"), T0 + timedelta(hours=1))  # synced while running
    store.update(spec("b", target="mod:other"), T0)  # same trigger: the run's next fire still wins
    assert finish(store, ca, T0 + timedelta(minutes=1)) and finish(store, cb, T0 + timedelta(minutes=1))
    assert store.get("a").next_fire == T0 + timedelta(hours=1)
    assert store.get("b").next_fire == T0 + timedelta(minutes=1)
    clock.set(T0 + timedelta(hours=1))
    (again,) = [c for c in claim_all(store) if c.spec.name == "a"]
    assert finish(store, again, T0 + timedelta(hours=2))  # retimed once, not for ever
    assert store.get("a").next_fire == T0 + timedelta(hours=2)


def test_a_fenced_out_end_appends_to_the_recorded_reason(store: SQLStore, clock: FakeClock) -> None:
    store.add(spec("a", timeout=timedelta(seconds=10)), T0)
    (c,) = claim_all(store)
    clock.advance(16)
    assert store.reap_expired(5) == 1
    assert not finish(store, c, T0 + timedelta(minutes=1), outcome=Outcome(RunStatus.FAILED, error="late boom"))
    (run,) = store.history()
    assert run.status is RunStatus.TIMED_OUT
    assert (run.error or "").startswith("hard timeout: claim not ended within timeout + 5s grace\n")
    assert "finished (failed) after its claim was taken over: late boom" in (run.error or "")


def test_pruning_keeps_the_row_that_fences_an_abandoned_fire(store: SQLStore, clock: FakeClock) -> None:
    store.add(spec("a"), T0)
    claim_all(store)
    store.release_node("n1", "n1 died")  # released, still due at T0: its row fences that fire
    clock.set(T0 + timedelta(days=40))
    assert store.prune_history(timedelta(days=30)) == 0
    (again,) = claim_all(store)
    assert again.scheduled_for == T0 and again.run_id is None  # not run a second time


def test_park_is_fenced_and_stops_the_schedule(store: SQLStore) -> None:
    store.add(spec("a"), T0)
    store.add(spec("b"), T0)
    ca, cb = claim_all(store)
    failed = Outcome(RunStatus.FAILED, error="not run: TriggerError: bad zone (schedule parked)")
    stale = Claim(cb.schedule_id, cb.spec, cb.scheduled_for, cb.claim_seq + 1, cb.claimed_at, cb.run_id)
    assert store.park("n1", [(Finish(ca, failed, None), "TriggerError: bad zone"), (Finish(stale, OK, None), "x")]) == [
        True,
        False,
    ]
    a = store.get("a")
    assert (a.state, a.next_fire, a.fault) == (ScheduleState.IDLE, None, "TriggerError: bad zone")
    assert store.get("b").state is ScheduleState.RUNNING and store.get("b").fault is None
    assert {r.schedule: r.status for r in store.history()} == {"a": RunStatus.FAILED, "b": RunStatus.RUNNING}
    assert store.set_enabled("a", True, T0 + timedelta(minutes=1)).fault is None


def test_release_untracked_keeps_what_the_node_tracks(store: SQLStore) -> None:
    for name in ("a", "b", "c"):
        store.add(spec(name), T0)
    ca, cb = store.claim_due("n1", limit=2, buckets=None)
    (_c,) = claim_all(store, "n2")
    assert store.release_untracked("n1", [ca], "lost") == 1
    assert store.release_untracked("n1", [ca], "lost") == 0
    states = {s.name: s.state for s in store.list_schedules()}
    assert states == {ca.spec.name: ScheduleState.RUNNING, cb.spec.name: ScheduleState.IDLE, "c": ScheduleState.RUNNING}
    by_name = {r.schedule: r for r in store.history()}
    assert by_name[cb.spec.name].status is RunStatus.ABANDONED and by_name[cb.spec.name].error == "lost"
    assert by_name[ca.spec.name].status is RunStatus.RUNNING and by_name["c"].status is RunStatus.RUNNING


def test_start_attempt_is_idempotent_under_its_claim(store: SQLStore) -> None:
    store.add(spec("a", retries=2), T0)
    (c,) = claim_all(store)
    store.end_attempt(c, Outcome(RunStatus.FAILED, error="x"))
    retry = Claim(c.schedule_id, c.spec, c.scheduled_for, c.claim_seq, c.claimed_at, None, attempt=2)
    first = store.start_attempt("n1", retry)
    assert first is not None and store.start_attempt("n1", retry) == first  # an answer lost, asked again
    store.release_node("n1", "gone")
    assert store.start_attempt("n1", retry) is None


def test_register_node_refuses_a_live_namesake(store: SQLStore, clock: FakeClock) -> None:
    assert store.register_node("n1", "proc-a", 4.0) is None
    assert store.register_node("n1", "proc-a", 4.0) is None  # the same process again
    live = store.register_node("n1", "proc-b", 4.0)
    assert live is not None and live.id == "n1"
    clock.advance(5)  # proc-a stopped beating
    assert store.register_node("n1", "proc-b", 4.0) is None


def test_a_dead_node_is_released_only_if_still_dead_when_judged(store: SQLStore, clock: FakeClock) -> None:
    store.add(spec("a"), T0)
    store.heartbeat("n1")
    claim_all(store, "n1")
    clock.advance(5)
    store.heartbeat("n1")  # beat after it was read as stale
    assert store.release_dead_node("n1", 4.0, "dead") is None
    assert store.get("a").state is ScheduleState.RUNNING
    clock.advance(5)
    assert store.release_dead_node("n1", 4.0, "dead") == 1
    assert store.get("a").state is ScheduleState.IDLE and store.nodes() == []
    (run,) = store.history()
    assert run.status is RunStatus.ABANDONED and run.error == "dead"
