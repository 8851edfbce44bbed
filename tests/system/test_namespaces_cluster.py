"""Namespaces on two real hashring nodes over PostgreSQL (docs/teams.md): a node restricted to
some namespaces (``[scheduler] namespaces``) runs only theirs; a herd in one namespace does not
stand before another's due fires (the claim takes turns, so the other's fires are claimed before
the herd is drained: evidence from the order of the run rows, which the claims insert, not from
timings); a namespace's ``max_concurrent`` holds across both nodes; and every fire runs once.

The node that serves the other namespace makes its first claim before the second node starts:
started together, the second (which does not serve it) could drain the whole herd alone while the
first was still starting on a loaded machine, leaving no claim that had to choose."""

from __future__ import annotations

import signal
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support.cluster import node_config, start_node
from tests.support.concurrentruns import every_second, most_at_once, ran
from tickwork.structures import RunStatus, SchedulePlan, ScheduleSpec
from tickwork_postgres.store import PostgresStore

RUN_FOR = 12.0  # at least: c's limit needs several seconds of every-second fires
UNTIL = 120.0  # at most: the nodes are stopped (SIGTERM) once the herd has run and RUN_FOR passed
HERD = 600

pytestmark = pytest.mark.slow


def herd(i: int) -> ScheduleSpec:
    # Yearly: each fires once in the test, at the overdue time it is written with.
    return ScheduleSpec(
        name=f"h{i:04d}",
        trigger_kind="cron",
        expression="0 0 1 1 *",
        target="tests.support.cluster_jobs:mark",
        arguments={"n": i},
        misfire_grace=timedelta(hours=1),
        namespace="a",
    )


def herd_succeeded(store: PostgresStore) -> int:
    return sum(1 for r in store.history(limit=100_000) if r.namespace == "a" and r.status is RunStatus.SUCCEEDED)


def test_restricted_nodes_fair_claims_and_a_namespace_limit_on_two_nodes(tmp_path: Path, postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    store.upgrade()
    store.open()
    # Namespace a: a herd overdue by 10 s. Namespace b: three every-second schedules overdue by
    # 1 s, so every one of a's fires is earlier: a claim of the earliest first would take all of
    # a's before any of b's.
    store.write_schedules(
        lambda _: SchedulePlan(create=tuple(herd(i) for i in range(HERD))),
        lambda spec, now: now - timedelta(seconds=10),
    )
    t = store.now()
    for i in range(3):
        tick = ScheduleSpec(
            name=f"tick-{i}",
            trigger_kind="cron",
            expression="* * * * * *",
            target="tests.support.cluster_jobs:mark",
            arguments={"n": 100 + i},
            misfire_grace=timedelta(hours=1),
            namespace="b",
        )
        store.add(tick, t - timedelta(seconds=1))
    # Namespace c: at most one run at once across the cluster ([namespaces.c] max_concurrent).
    for i in range(2):
        store.add(every_second(f"slow-{i}", 200 + i, 1.5, namespace="c"), t + timedelta(seconds=1))
    fires = tmp_path / "fires.txt"
    fires.touch()
    configs = {
        # n1 serves every namespace; n2 only a and c: b's fires must all run on n1.
        "n1": node_config(tmp_path, postgres_url, "n1", store={"batch_size": 20}),
        "n2": node_config(tmp_path, postgres_url, "n2", store={"batch_size": 20}, scheduler={"namespaces": "__LIST__"}),
    }
    for path in configs.values():
        text = path.read_text().replace('"__LIST__"', '["a", "c"]')
        path.write_text(text + "\n[namespaces.c]\nmax_concurrent = 1\n")
    logs = {name: tmp_path / f"{name}.log" for name in configs}
    started = time.monotonic()
    procs = [start_node(configs["n1"], fires, UNTIL, logs["n1"])]
    # n2 once n1 has claimed (a run row of n1's): n1's first claim is made with the whole herd due.
    deadline = time.monotonic() + 60
    while not any(r.node == "n1" for r in store.history(limit=100)):
        assert procs[0].poll() is None and time.monotonic() < deadline, logs["n1"].read_text()[-3000:]
        time.sleep(0.05)
    procs.append(start_node(configs["n2"], fires, UNTIL, logs["n2"]))
    # A loaded machine may need more than RUN_FOR for the herd: wait for it (not a fixed time),
    # then stop both nodes as an operator would; their running jobs end first.
    while time.monotonic() - started < RUN_FOR or herd_succeeded(store) < HERD:
        assert all(p.poll() is None for p in procs), "a node stopped early"
        if time.monotonic() - started > UNTIL - 10:
            break  # the assertions below say how much of the herd ran
        time.sleep(0.5)
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p, name in zip(procs, logs, strict=True):
        p.wait(timeout=60)
        assert p.returncode == 0, logs[name].read_text()[-3000:]
    end = store.now()
    history = store.history(limit=100_000)
    store.close()

    # Every fire once in the history and executed once (exactly-once across the two nodes).
    assert max(Counter((r.namespace, r.schedule, r.scheduled_for, r.attempt) for r in history).values()) == 1
    lines = fires.read_text().splitlines()
    executed = Counter(line.split(" ")[-1] for line in lines)  # by run id
    assert max(executed.values()) == 1, executed.most_common(3)

    herd_runs = [r for r in history if r.namespace == "a"]
    assert len(herd_runs) == HERD and {r.status for r in herd_runs} == {RunStatus.SUCCEEDED}
    ticks = [r for r in history if r.namespace == "b"]
    # The restriction: n2 serves a and c only.
    assert ticks and {r.node for r in ticks} == {"n1"}
    assert {r.node for r in herd_runs} <= {"n1", "n2"}
    # Fair claims: b's overdue fires were claimed (their run rows written) before the last of
    # a's earlier herd was.
    first_ticks = [min((r for r in ticks if r.schedule == f"tick-{i}"), key=lambda r: r.id) for i in range(3)]
    assert all(r.scheduled_for < t for r in first_ticks)
    assert max(r.id for r in first_ticks) < max(r.id for r in herd_runs)

    # [namespaces.c] max_concurrent = 1: c's runs never overlap, on either node; the fires
    # refused are recorded with the reason.
    slow = [r for r in history if r.namespace == "c"]
    assert most_at_once(ran(slow), end) == 1
    reasons = Counter(r.error for r in slow if r.status is RunStatus.SKIPPED)
    assert reasons["namespace c at its limit [namespaces.c] max_concurrent = 1"] >= 2, reasons
