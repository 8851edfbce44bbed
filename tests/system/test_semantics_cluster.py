"""Schedule semantics on a real node process over PostgreSQL: a pause with an end resumes by
itself (by the database clock), ``pause_after_failures`` pauses a failing schedule with its note,
and jittered schedules fire at their own offsets, the offset ``tickwork next`` prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.support.paths import REPO
from tickwork import schedules as admin
from tickwork.scheduling.firetimes import jitter_offset
from tickwork.sql.schema import runs, schedules
from tickwork.structures import ScheduleSpec, failures_note, iso_z
from tickwork_postgres.store import PostgresStore

RUN_FOR = 12.0
JITTERED = 20

pytestmark = pytest.mark.slow


def config(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "node.toml"
    path.write_text(
        textwrap.dedent(
            f"""
            [scheduler]
            node_id = "n1"
            [store]
            plugin = "postgres"
            url = "{url}"
            """
        )
    )
    return path


def tickwork(cfg: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tickwork.cli", *args, "--config", str(cfg)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def every_second(name: str, target: str, n: int, **options: object) -> ScheduleSpec:
    return ScheduleSpec(
        name=name,
        trigger_kind="cron",
        expression="* * * * * *",
        target=f"tests.support.cluster_jobs:{target}",
        arguments={"n": n},
        timeout=timedelta(seconds=5),
        **options,  # type: ignore[arg-type]
    )


def test_pauses_failures_and_jitter_on_a_real_node(tmp_path: Path, postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    store.upgrade()
    store.open()
    admin.add(store, every_second("paused", "work", 1))
    admin.add(store, every_second("flaky", "fails", 2, pause_after_failures=3))
    for i in range(JITTERED):
        admin.add(store, every_second(f"j{i:02d}", "work", 100 + i, jitter=timedelta(seconds=10)))
    cfg = config(tmp_path, postgres_url)
    fires = tmp_path / "fires.txt"
    fires.touch()
    env = dict(os.environ, CLUSTER_FIRES=str(fires))

    paused = tickwork(cfg, "--json", "jobs", "pause", "paused", "--note", "db migration", "--until", "5s")
    assert paused.returncode == 0, paused.stderr
    pause = json.loads(paused.stdout)["pause"]
    assert pause["note"] == "db migration" and pause["until"] is not None
    until = store.get("paused").pause.until  # type: ignore[union-attr]
    assert until is not None

    node = tickwork(cfg, "run", "--for", f"{RUN_FOR:.1f}", env=env)
    assert node.returncode == 0, node.stdout[-3000:] + node.stderr[-3000:]

    with store.engine.connect() as conn:
        rows = conn.execute(
            select(schedules.c.name, runs.c.scheduled_for, runs.c.started_at, runs.c.status).join(
                schedules, runs.c.schedule_id == schedules.c.id
            )
        ).all()

    # The pause: no fire at or before its end; firing resumed by itself afterwards.
    resumed = [r for r in rows if r.name == "paused"]
    assert resumed and all(r.scheduled_for > until for r in resumed)
    assert len([r for r in resumed if r.status == "succeeded"]) >= 3
    assert store.get("paused").spec.enabled and store.get("paused").pause is None

    # Three failed fires, then paused with the note saying so; nothing after.
    flaky = [r for r in rows if r.name == "flaky" and r.status != "skipped"]  # a late first fire is skipped
    assert [r.status for r in sorted(flaky, key=lambda r: r.scheduled_for)] == ["failed"] * 3
    stopped = store.get("flaky")
    assert not stopped.spec.enabled and stopped.pause is not None and stopped.pause.note == failures_note(3)

    # Jitter: every fire of j<i> lies at its own offset past a whole second, and none started early.
    for i in range(JITTERED):
        name = f"j{i:02d}"
        offset = jitter_offset(name, timedelta(seconds=10))
        mine = [r for r in rows if r.name == name and r.status == "succeeded"]
        assert mine, name
        for r in mine:
            assert r.scheduled_for.microsecond == offset.microseconds, (name, r.scheduled_for, offset)
            assert r.started_at >= r.scheduled_for
    # `tickwork next` with a schedule's name and jitter prints its stored next fire (three of them:
    # each is a process start).
    for i in range(3):
        name = f"j{i:02d}"
        offset = jitter_offset(name, timedelta(seconds=10))
        stored_next = store.get(name).next_fire
        assert stored_next is not None
        after = stored_next - timedelta(microseconds=1)
        shown = tickwork(cfg, "next", "* * * * * *", "--jitter", "10s", "--name", name, "--after", iso_z(after))
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.strip() == iso_z(stored_next)
        assert f"+{offset.total_seconds():.6f}s" in shown.stderr
    store.close()
