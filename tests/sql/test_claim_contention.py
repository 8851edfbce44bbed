"""Every claim strategy under contention from several real processes: no fire claimed twice,
none lost, none early. Schedules are re-due every few milliseconds, so a loser that re-takes a row
another worker has just finished (the flaw measured in a naive mark loop) would be caught."""

from __future__ import annotations

import itertools
import multiprocessing
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support.stores import STORE_PARAMS, make_store
from tickwork.plugin.manager import default_manager
from tickwork.structures import Finish, Outcome, RunStatus, ScheduleSpec, ScheduleState

WORKERS = 4
SCHEDULES = 40
STEP = timedelta(milliseconds=5)
DURATION = 2.0


def _worker(kind: str, where: str, claim: str, node: str, start: Any, out: Any) -> None:
    # Built through the registry, as a node builds it: any SQL store plugin takes part.
    location = {"path": where} if kind == "sqlite" else {"url": where}
    store = default_manager().stores.get(kind)(claim=claim, batch_size=10, **location)
    store.open()
    seen: list[tuple[int, datetime, datetime, int | None]] = []
    start.wait()
    deadline = time.monotonic() + DURATION
    while time.monotonic() < deadline:
        claims = store.claim_due(node, limit=10, buckets=None)
        seen.extend((c.schedule_id, c.scheduled_for, c.claimed_at, c.run_id) for c in claims)
        ends = [Finish(c, Outcome(RunStatus.SUCCEEDED), c.scheduled_for + STEP) for c in claims]
        while ends:
            # An end whose row another worker's transaction held locked comes back None: again.
            ends = [f for f, ok in zip(ends, store.finish(node, ends), strict=True) if ok is None]
    store.close()
    out.put(seen)


def _contexts() -> multiprocessing.context.ForkServerContext:
    """Worker processes forked from one server process that imported tickwork and the stores once
    (not the test process, whose threads a fork would copy half-way): 44 workers in this module
    paid a fresh interpreter's imports each with ``spawn``."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__, "tickwork_sqlite.store", "tickwork_postgres.store", "tickwork_mysql.store"])
    return ctx


@pytest.mark.parametrize("store_kind", STORE_PARAMS)
def test_contention(store_kind: tuple[str, str], request: pytest.FixtureRequest, tmp_path: Path) -> None:
    kind, claim = store_kind
    store = make_store(kind, claim, request, tmp_path)
    now = store.now()
    for i in range(SCHEDULES):
        store.add(
            ScheduleSpec(name=f"s{i:03d}", trigger_kind="cron", expression="* * * * * *", target="m:f"),
            now - timedelta(milliseconds=200),
        )
    where = str(tmp_path / "tickwork.db") if kind == "sqlite" else store.url  # type: ignore[attr-defined]
    ctx = _contexts()
    start = ctx.Event()
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(kind, where, claim, f"w{n}", start, out)) for n in range(WORKERS)]
    for p in procs:
        p.start()
    time.sleep(0.5)  # let every worker connect before the race starts
    start.set()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(10)
        assert p.exitcode == 0
    claims = [c for r in results for c in r]
    assert len(claims) > SCHEDULES, "the workers claimed almost nothing; the test exercised no contention"

    fires = [(sid, fire) for sid, fire, _, _ in claims]
    assert len(fires) == len(set(fires)), "a (schedule, fire time) was claimed twice"
    assert all(run_id is not None for *_, run_id in claims), "a claim came without its run (a duplicate fire)"
    early = [(sid, fire, at) for sid, fire, at, _ in claims if at < fire]
    assert not early, f"claimed before due: {early[:3]}"

    # Nothing lost: each schedule's claimed fire times form one unbroken chain, and the store's
    # history holds exactly those runs.
    by_schedule: dict[int, list[datetime]] = {}
    for sid, fire in fires:
        by_schedule.setdefault(sid, []).append(fire)
    for s in store.list_schedules():
        chain = sorted(by_schedule.get(s.id, []))
        assert chain, f"{s.name} never fired"
        assert all(b - a == STEP for a, b in itertools.pairwise(chain)), f"{s.name} has a gap"
        assert s.state is ScheduleState.IDLE and s.next_fire == chain[-1] + STEP
    assert len(store.history(limit=100_000)) == len(claims)
    store.close()
