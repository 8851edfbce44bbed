"""Overdue fires are shared: two real node processes on real PostgreSQL with ``hashring`` and one
owner per bucket. One node runs one job at a time (``max_in_flight = 1``) and cannot keep up with
its buckets' fires; the other takes those fires once they are overdue by ``steal_after``, and
nothing runs twice."""

from __future__ import annotations

import collections
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.support.cluster import node_config, start_node
from tickwork import schedules as admin
from tickwork.sql.schema import runs, schedules
from tickwork.structures import ScheduleSpec, bucket_of
from tickwork_membership.ring import BucketRing
from tickwork_postgres.store import PostgresStore

pytestmark = pytest.mark.slow

SECONDS = 12.0


def test_a_node_behind_on_its_buckets_has_its_overdue_fires_taken_by_another(postgres_url: str, tmp_path: Path) -> None:
    ring = BucketRing(["n1", "n2"], owners=1)
    slow_buckets = set(ring.buckets_of("n1"))
    names: dict[bool, list[str]] = {True: [], False: []}
    i = 0
    while min(len(v) for v in names.values()) < 4:
        name = f"s{i:03d}"
        owned_by_slow = bucket_of(name) in slow_buckets
        if len(names[owned_by_slow]) < 4:
            names[owned_by_slow].append(name)
        i += 1
    store = PostgresStore(postgres_url)
    store.upgrade()
    store.open()
    for n, name in enumerate(names[True] + names[False]):
        admin.add(
            store,
            ScheduleSpec(
                name=name,
                trigger_kind="cron",
                expression="* * * * * *",
                target="tests.support.cluster_jobs:slow",
                arguments={"n": n},
                timeout=timedelta(seconds=5),
            ),
        )
    fires = tmp_path / "fires.txt"
    fires.touch()
    procs = [
        start_node(
            node_config(
                tmp_path,
                postgres_url,
                "n1",
                scheduler={"steal_after": 0.5, "max_in_flight": 1},
                store={"claim": "skip-locked"},
                membership={"owners": 1, "heartbeat_interval": 0.5, "node_ttl": 60},
            ),
            fires,
            SECONDS,
            tmp_path / "n1.log",
        ),
        start_node(
            node_config(
                tmp_path,
                postgres_url,
                "n2",
                scheduler={"steal_after": 0.5},
                store={"claim": "skip-locked"},
                membership={"owners": 1, "heartbeat_interval": 0.5, "node_ttl": 60},
            ),
            fires,
            SECONDS,
            tmp_path / "n2.log",
        ),
    ]
    for p in procs:
        p.wait(timeout=SECONDS + 60)
    logs = "\n".join(f.read_text(errors="replace")[-3000:] for f in sorted(tmp_path.glob("n*.log")))
    assert all(p.returncode == 0 for p in procs), logs

    with store.engine.connect() as conn:
        rows = conn.execute(
            select(schedules.c.name, runs.c.scheduled_for, runs.c.status, runs.c.node).join(
                schedules, schedules.c.id == runs.c.schedule_id
            )
        ).all()
    store.close()
    per_fire = collections.Counter((r.name, r.scheduled_for) for r in rows if r.status != "skipped")
    assert per_fire and max(per_fire.values()) == 1, "a (schedule, fire time) ran twice"
    ran = collections.Counter((r.name in names[True], r.node) for r in rows if r.status == "succeeded")
    # The slow node's buckets: it ran some of their fires, and the other node took the overdue rest.
    assert ran[(True, "n1")] > 0 and ran[(True, "n2")] > 0, (ran, logs)
    # Nobody steals from a node that keeps up: the other node's fires are never overdue that long.
    assert ran[(False, "n1")] == 0, ran
    # Between them the slow node's schedules fired about as often as the others' (not once per
    # 0.25 s of one job thread).
    assert ran[(True, "n1")] + ran[(True, "n2")] >= 0.6 * (ran[(False, "n2")]), ran
