"""Poison rows and a broken plugin against a real ``tickwork run`` process on SQLite: the node
keeps running the healthy schedule, parks the rows it cannot handle, never imports the blocked
plugin and leaves nothing ``running``."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

from tickwork.errors import ConfigError
from tickwork.plugin import hookimpl
from tickwork.plugin.manager import PluginManager
from tickwork.structures import RunStatus, ScheduleSpec, ScheduleState
from tickwork_sqlite.store import SQLiteStore

pytestmark = pytest.mark.slow

PROCESS_TIMEOUT_S = 60

JOBS = """
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def healthy():
    with open(os.path.join(HERE, "healthy.txt"), "a", encoding="utf-8") as fh:
        fh.write("ran\\n")


def failing():
    raise RuntimeError("fails every time")
"""

BROKEN_PLUGIN = """
import os

# Proof of import for the test: a blocked plugin must never get here.
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "imported.txt"), "w").close()
raise ImportError("broken_plugin needs a library that is not installed")
"""


def fields_of(spec: ScheduleSpec) -> dict[str, object]:
    return {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}


def make_project(tmp_path: Path, block: bool, extra_scheduler: str = "") -> tuple[Path, dict[str, str]]:
    site = tmp_path / "site"
    dist = site / "broken_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[tickwork]\nbroken = broken_plugin\n", encoding="utf-8")
    (site / "broken_plugin.py").write_text(BROKEN_PLUGIN, encoding="utf-8")
    (tmp_path / "poison_jobs.py").write_text(JOBS, encoding="utf-8")
    blocked = '[plugins]\nblock = ["broken"]\n' if block else ""
    config = f"""
        [scheduler]
        node_id = "poison-node"
        {extra_scheduler}

        [store]
        plugin = "sqlite"
        path = "{tmp_path / "poison.db"}"
    """
    (tmp_path / "tickwork.toml").write_text(textwrap.dedent(config) + blocked, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "TICKWORK_CONFIG"}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(tmp_path), env.get("PYTHONPATH", "")])
    return site, env


def tickwork(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("tickwork")
    return subprocess.run(
        [str(script), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )


def add_rows(path: Path) -> None:
    """The rows as an older node, or one with other plugins, could have stored them."""
    store = SQLiteStore(str(path))
    store.upgrade()
    store.open()
    try:
        base = fields_of(ScheduleSpec("healthy", "interval", "1s", "poison_jobs:healthy"))
        rows = {
            "healthy": {},
            "unknown-kind": {"trigger_kind": "sundial", "expression": "noon"},
            "unknown-zone": {"trigger_kind": "cron", "expression": "* * * * * *", "timezone": "Mars/Olympus_Mons"},
            "retry-storm": {"target": "poison_jobs:failing", "retries": 5000, "retry_backoff": timedelta(0)},
        }
        now = store.now()
        for name, changes in rows.items():
            store.add(ScheduleSpec.stored({**base, "name": name, **changes}), now + timedelta(seconds=1))
    finally:
        store.close()


def test_poison_rows_and_a_blocked_broken_plugin_do_not_stop_the_node(tmp_path: Path) -> None:
    site, env = make_project(tmp_path, block=True)
    add_rows(tmp_path / "poison.db")
    result = tickwork(tmp_path, env, "run", "--for", "10")
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (site / "imported.txt").exists(), "the blocked plugin was imported"
    ran = (tmp_path / "healthy.txt").read_text(encoding="utf-8").splitlines()
    assert len(ran) >= 7
    store = SQLiteStore(str(tmp_path / "poison.db"))
    store.open()
    try:
        schedules = {s.name: s for s in store.list_schedules()}
        assert [n for n, s in schedules.items() if s.state is ScheduleState.RUNNING] == []
        assert [r for r in store.history(limit=10_000) if r.status is RunStatus.RUNNING] == []
        for name, fault in (("unknown-kind", "sundial"), ("unknown-zone", "Mars/Olympus_Mons")):
            assert schedules[name].next_fire is None and fault in (schedules[name].fault or ""), name
        storm = store.history(limit=10_000, schedule="retry-storm")
        assert storm and max(r.attempt for r in storm) <= 101
        assert schedules["healthy"].fault is None
    finally:
        store.close()
    listed = tickwork(tmp_path, env, "jobs", "list")
    assert listed.returncode == 0, listed.stderr
    assert "parked: PluginNotFoundError: unknown trigger plugin 'sundial'" in listed.stdout


def test_an_unblocked_broken_plugin_and_a_nan_grace_are_one_line_errors(tmp_path: Path) -> None:
    _, env = make_project(tmp_path, block=False)
    result = tickwork(tmp_path, env, "run", "--for", "1")
    assert result.returncode == 2
    assert result.stderr.startswith("tickwork: error: cannot load tickwork plugin 'broken'"), result.stderr
    assert "Traceback" not in result.stderr
    _, env = make_project(tmp_path / "nan", block=True, extra_scheduler="hard_timeout_grace = nan")
    result = tickwork(tmp_path / "nan", env, "run", "--for", "1")
    assert result.returncode == 2
    assert result.stderr.startswith("tickwork: error: ") and "scheduler.hard_timeout_grace" in result.stderr
    assert result.stderr.count("\n") == 1


class Misspelled:
    @hookimpl
    def tickwork_register_trigers(self, registry: object) -> None:
        pass


def test_a_misspelled_hook_implementation_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"tickwork plugin 'Misspelled': .*tickwork_register_trigers"):
        PluginManager(extra=[Misspelled()], entry_points_enabled=False)


def test_decorators_work_before_any_configuration_was_read(tmp_path: Path) -> None:
    """The process's manager is built on first use when no configuration built it (no deadlock)."""
    code = "import tickwork\n@tickwork.every('2s')\ndef job():\n    pass\nprint('declared')\n"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=PROCESS_TIMEOUT_S
    )
    assert (result.returncode, result.stdout) == (0, "declared\n"), result.stderr
