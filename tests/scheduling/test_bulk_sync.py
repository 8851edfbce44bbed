"""Deployment sync of many declared jobs (issue #18): nodes starting together, fire times from
the clock at the moment of writing (docs/deployment-sync.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from tests.support.servers.configs import ConfigFor
from tests.support.servers.postgres import PostgresServer
from tickwork import schedules as admin
from tickwork.errors import ScheduleExistsError
from tickwork.scheduling.declare import DeclaredJob
from tickwork.sql import bulk
from tickwork.sql.rows import spec_values
from tickwork.structures import ScheduleSpec
from tickwork_sqlite.store import SQLiteStore

DECLARED = 2000


def tickwork_bin() -> str:
    return str(Path(sys.executable).parent / "tickwork")


def write_module(path: Path, count: int) -> None:
    # Yearly crons: nothing fires while the test runs, so only the sync is exercised.
    defs = "".join(
        f'@tickwork.cron("0 0 1 1 *", name="bulk-{i:05d}")\ndef job_{i}():\n    pass\n\n' for i in range(count)
    )
    path.write_text("import tickwork\n\n" + defs)


def start_two_nodes_at_once(tmp_path: Path, store_table: str) -> list[str]:
    write_module(tmp_path / "manyjobs.py", DECLARED)
    (tmp_path / "tickwork.toml").write_text(f'[scheduler]\njobs = ["manyjobs"]\n{store_table}')
    env = dict(os.environ, TICKWORK_CONFIG="", PYTHONPATH=str(tmp_path))
    subprocess.run([tickwork_bin(), "db", "upgrade"], cwd=tmp_path, env=env, check=True, capture_output=True)
    nodes = [
        subprocess.Popen(
            [tickwork_bin(), "run", "--for", "1", "--log-level", "info"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=240)[0] for p in nodes]
    assert [p.returncode for p in nodes] == [0, 0], outputs
    listed = subprocess.run(
        [tickwork_bin(), "jobs", "list", "--json"], cwd=tmp_path, env=env, check=True, capture_output=True, text=True
    )
    names = [json.loads(line)["name"] for line in listed.stdout.splitlines()]
    assert sorted(names) == [f"bulk-{i:05d}" for i in range(DECLARED)]
    return outputs


def created_counts(outputs: list[str]) -> list[int]:
    counts = []
    for out in outputs:
        found = re.search(r"synced manyjobs: (\d+) created, \d+ updated, (\d+) unchanged", out)
        assert found, out
        counts.append(int(found.group(1)))
    return sorted(counts)


def test_two_postgres_nodes_starting_at_once_create_every_schedule_once(tmp_path: Path, config_for: ConfigFor) -> None:
    outputs = start_two_nodes_at_once(tmp_path, config_for("postgres").toml())
    # The second node waited for the first one's write, then found everything synced.
    assert created_counts(outputs) == [0, DECLARED]


def test_two_sqlite_nodes_starting_at_once_create_every_schedule_once(tmp_path: Path, config_for: ConfigFor) -> None:
    outputs = start_two_nodes_at_once(tmp_path, config_for("sqlite").toml())
    assert created_counts(outputs) == [0, DECLARED]
    assert "database is locked" not in "".join(outputs)


def test_two_mysql_nodes_starting_at_once_create_every_schedule_once(tmp_path: Path, config_for: ConfigFor) -> None:
    outputs = start_two_nodes_at_once(tmp_path, config_for("mysql").toml())
    assert created_counts(outputs) == [0, DECLARED]


class SlowClock:
    """A database clock that moves one second at every reading: a sync that reads it once per
    schedule (as the row-by-row sync did) takes thousands of seconds by it."""

    def __init__(self, start: datetime) -> None:
        self.value = start

    def __call__(self) -> datetime:
        self.value += timedelta(seconds=1)
        return self.value


def test_a_large_first_sync_leaves_no_fire_time_in_the_past(tmp_path: Path) -> None:
    clock = SlowClock(datetime(2026, 1, 5, 12, 0, 0, tzinfo=UTC))
    store = SQLiteStore(str(tmp_path / "t.db"), clock=clock)
    store.upgrade()
    store.open()
    try:
        jobs = [
            DeclaredJob(
                ScheduleSpec(name=f"m.j{i}", trigger_kind="interval", expression="60s", target=f"m:j{i}", module="m"),
                lambda: None,
            )
            for i in range(DECLARED)
        ]
        report = admin.sync_module(store, "m", jobs)
        assert len(report.created) == DECLARED
        after = store.now()
        # Nothing is due yet when the sync ends: the first claim records no skipped fire time.
        assert min(s.next_fire for s in store.list_schedules() if s.next_fire) > after
        assert store.claim_due("n1", limit=100, buckets=None) == []
        assert [r for r in store.history(limit=10) if r.status.value == "skipped"] == []
    finally:
        store.close()


def test_sync_updates_and_removes_in_bulk(tmp_path: Path) -> None:
    count = 3
    store = SQLiteStore(str(tmp_path / "t.db"))
    store.upgrade()
    store.open()
    try:
        specs = [
            ScheduleSpec(name=f"m.j{i}", trigger_kind="cron", expression="* * * * *", target=f"m:j{i}", module="m")
            for i in range(count)
        ]
        admin.sync_module(store, "m", [DeclaredJob(s, lambda: None) for s in specs])
        kept = store.get("m.j1").next_fire
        changed = [
            ScheduleSpec(name="m.j0", trigger_kind="cron", expression="0 0 1 1 *", target="m:j0", module="m"),
            ScheduleSpec(name="m.j1", trigger_kind="cron", expression="* * * * *", target="m:other", module="m"),
        ]
        report = admin.sync_module(store, "m", [DeclaredJob(s, lambda: None) for s in changed])
        assert report.updated == ["m.j0", "m.j1"] and report.removed == ["m.j2"]
        assert store.get("m.j0").next_fire.month == 1 and store.get("m.j0").next_fire.day == 1  # type: ignore[union-attr]
        assert store.get("m.j1").next_fire == kept and store.get("m.j1").spec.target == "m:other"
        assert [s.name for s in store.list_schedules()] == ["m.j0", "m.j1"]
    finally:
        store.close()


def test_the_sync_workload_of_tickwork_bench_runs_at_a_tiny_size(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    out = tmp_path / "sync.json"
    done = subprocess.run(
        [
            tickwork_bin(), "bench",
            "--store", "sqlite,postgres",
            "--claim", "default",
            "--nodes", "1,2",
            "--membership", "hashring",
            "--workload", "sync",
            "--schedules", "200",
            "--pg-url", postgres_server.url("postgres"),
            "--out", str(out),
            "--no-progress",
        ],
        capture_output=True, text=True, timeout=240, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "start empty s" in done.stdout and "fires/s" not in done.stdout
    doc = json.loads(out.read_text())
    assert doc["failed"] is False
    assert {(c["store"], c["membership"], c["nodes"]) for c in doc["cells"]} == {
        (store, membership, k) for store in ("sqlite", "postgres") for membership, k in (("single", 1), ("hashring", 2))
    }
    for cell in doc["cells"]:
        m = cell["metrics"]
        assert cell["errors"] == [], cell
        assert (m["schedules"], m["stored"]) == (200, 200)
        assert 0 < m["import_s"] < 60
        assert m["target_s"] == pytest.approx(3 * m["import_s"] + 3)
        for name in ("empty", "unchanged"):
            per_node = m[f"start_{name}_node_s"]
            assert len(per_node) == cell["nodes"] and m[f"start_{name}_s"] == max(per_node)
            # No comparison with the import time here: at 200 jobs both are the interpreter's start
            # and tickwork's own import, and which is longer is up to the machine's load.
            assert min(per_node) > 0
            assert m[f"start_{name}_ratio"] == pytest.approx(m[f"start_{name}_s"] / m["import_s"])
        assert m["met"] == (max(m["start_empty_s"], m["start_unchanged_s"]) <= m["target_s"])
        # SQLite and PostgreSQL serialize the sync: one node creates everything, the others find it done.
        assert sorted(m["created_by_node"]) == [0] * (cell["nodes"] - 1) + [200]
        assert [n["exit_code"] for n in cell["node_results"]] == [0] * 2 * cell["nodes"]
    (postgres,) = [d["database"] for d in doc["databases"] if d["store"] == "postgres"]
    with psycopg.connect(postgres_server.conninfo(postgres_server.maintenance_dbname), autocommit=True) as conn:
        assert conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (postgres,)).fetchone() is None


def test_a_batch_insert_reads_back_what_it_wrote_and_refuses_a_name_of_another_module(tmp_path: Path) -> None:
    # The insert reads its new rows back by id; a name it skipped (taken before) is read by key:
    # of the same module it is reported with its stored id and version, of another it is refused.
    store = SQLiteStore(str(tmp_path / "t.db"))
    store.upgrade()
    store.open()
    try:

        def spec(name: str, module: str) -> ScheduleSpec:
            return ScheduleSpec(
                name=name, trigger_kind="cron", expression="0 0 1 1 *", target=f"{module}:f", module=module
            )

        def no_fire(spec: ScheduleSpec, now: datetime) -> datetime | None:
            return None

        taken = admin.add(store, spec("m.taken", "m"))
        changed = ScheduleSpec(name="m.taken", trigger_kind="cron", expression="0 0 2 1 *", target="m:f", module="m")
        assert admin.update(store, changed, recompute=True).version == 2
        fresh = [spec(f"m.new{i}", "m") for i in range(3)]
        with store._tx() as conn:
            written = bulk.insert_schedules(store, conn, [*fresh, spec("m.taken", "m")], no_fire, spec_values)
        ids = {s.name: s.id for s in store.list_schedules()}
        assert written == {
            **{s.key: (ids[s.name], 1) for s in fresh},
            ("default", "m.taken"): (taken.id, 2),
        }
        with pytest.raises(ScheduleExistsError, match=r"m\.taken"), store._tx() as conn:
            bulk.insert_schedules(store, conn, [spec("m.taken", "other")], no_fire, spec_values)
    finally:
        store.close()
