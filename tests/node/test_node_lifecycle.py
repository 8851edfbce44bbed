"""``tickwork run`` as a real process: the start-up banner, run ends in the log (text and JSON),
``shutdown_grace`` and a second signal, and a third-party plugin found only through a
``.dist-info`` on ``PYTHONPATH`` receiving the lifecycle hooks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

import tickwork
from tests.support.processes import PROCESS_TIMEOUT_S, lines, tickwork_command
from tickwork.config import parse
from tickwork.node import build_store
from tickwork.plugin.manager import plugin_manager_for
from tickwork.structures import RunRecord, RunStatus

pytestmark = pytest.mark.slow

JOBS = '''
"""Jobs of the lifecycle tests."""

import os
import time

import tickwork

HERE = os.path.dirname(os.path.abspath(__file__))
WHICH = os.environ.get("LC_JOBS", "")


@tickwork.cron("* * * * * *", name="quick", enabled="quick" in WHICH)
def quick() -> None:
    pass


@tickwork.cron("* * * * * *", name="failing", enabled="failing" in WHICH)
def failing() -> None:
    raise KeyError("no such customer")


@tickwork.cron("* * * * * *", name="stuck", enabled="stuck" in WHICH)
def stuck() -> None:
    with open(os.path.join(HERE, "stuck.txt"), "a", encoding="utf-8") as fh:
        fh.write("start\\n")
    time.sleep(120)
'''

PLUGIN = '''
"""A third-party observer: installed only as a .dist-info with an entry point."""

import json
import os

from tickwork.plugin import hookimpl


def _write(event, **data):
    with open(os.environ["OBSERVER_OUT"], "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"event": event, **data}) + "\\n")


@hookimpl
def tickwork_node_started(node_id, config):
    _write("node_started", node_id=node_id, config=str(config.source))


@hookimpl
def tickwork_runs_started(runs):
    raise RuntimeError("observer bug in runs_started")


@hookimpl
def tickwork_runs_finished(node_id, results):
    _write("runs_finished", node_id=node_id, runs=[[r.claim.spec.name, r.outcome.status.value] for r in results])


@hookimpl
def tickwork_membership_changed(node_id, members, owned):
    _write("membership_changed", members=list(members), owned=owned)


@hookimpl
def tickwork_node_stopping(node_id):
    _write("node_stopping", node_id=node_id)
'''


def write_project(tmp_path: Path, *, extra_config: str = "") -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "lc_jobs.py").write_text(textwrap.dedent(JOBS), encoding="utf-8")
    config = f"""
    [scheduler]
    jobs = ["lc_jobs"]
    node_id = "lc-node"

    [store]
    path = "{tmp_path / "lc.db"}"
    """
    (tmp_path / "tickwork.toml").write_text(textwrap.dedent(config) + textwrap.dedent(extra_config), encoding="utf-8")
    return tmp_path


def env_for(project: Path, jobs: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TICKWORK_CONFIG"}
    env.update(LC_JOBS=jobs, PYTHONUNBUFFERED="1", **extra)
    return env


def run_for(project: Path, seconds: float, jobs: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*tickwork_command(), "run", "--for", str(seconds)],
        cwd=project,
        env=env_for(project, jobs, **extra),
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )


def history(project: Path) -> list[RunRecord]:
    config = parse({"store": {"path": str(project / "lc.db")}})
    store = build_store(config, plugin_manager_for(config))
    store.open()
    try:
        return store.history(limit=1000)
    finally:
        store.close()


def test_the_banner_names_config_store_membership_and_jobs(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    result = run_for(project, 1, "quick")
    assert result.returncode == 0, result.stderr
    err = result.stderr
    assert f"config {project / 'tickwork.toml'}" in err
    assert f"store SQLite database '{project / 'lc.db'}'" in err
    assert "membership single" in err
    assert "synced lc_jobs: 3 created" in err
    assert "job quick: cron '* * * * * *' UTC, next fire 20" in err
    assert "job failing: cron '* * * * * *' UTC, next fire never" in err  # disabled
    assert "alembic" not in err.lower()


def test_a_failed_run_is_one_json_error_record_with_its_traceback(tmp_path: Path) -> None:
    project = write_project(tmp_path, extra_config='[logging]\nformat = "json"\n')
    result = run_for(project, 2.5, "failing")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stderr.splitlines()]  # every line is one object
    errors = [r for r in records if r["level"] == "ERROR" and r["logger"] == "tickwork.runs"]
    assert errors, result.stderr
    first = errors[0]
    assert first["schedule"] == "failing" and first["node"] == "lc-node"
    assert "KeyError: 'no such customer'" in first["message"]
    assert 'raise KeyError("no such customer")' in first["traceback"]
    runs = {r.id: r for r in history(project)}
    assert runs[first["run_id"]].status is RunStatus.FAILED
    assert runs[first["run_id"]].scheduled_for.isoformat().replace("+00:00", "Z") == first["scheduled_for"]
    # Successful runs stay at INFO; nothing else in the run was an error.
    assert all(r["logger"] == "tickwork.runs" for r in records if r["level"] == "ERROR")


def wait_for_start(project: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + PROCESS_TIMEOUT_S
    while "start" not in lines(project / "stuck.txt"):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the stuck job never started"
        time.sleep(0.02)


def test_a_second_signal_stops_at_once_and_records_the_run_abandoned(tmp_path: Path) -> None:
    project = write_project(tmp_path, extra_config="")  # shutdown_grace: the default 30 s
    process = subprocess.Popen(
        [*tickwork_command(), "run"], cwd=project, env=env_for(project, "stuck"), stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for_start(project, process)
        process.send_signal(signal.SIGINT)
        assert process.stderr is not None
        for line in process.stderr:  # the node says what it waits for before the second signal
            if "stopping: waiting up to" in line:
                assert "30s (scheduler.shutdown_grace) for 1 running job(s) to end: stuck" in line
                assert "again to stop now" in line
                break
        process.send_signal(signal.SIGINT)
        rest = process.communicate(timeout=PROCESS_TIMEOUT_S)[1]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, rest
    assert "received SIGINT again; stopping now" in rest
    assert "Traceback" not in rest
    stuck = [r for r in history(project) if r.schedule == "stuck"]
    assert [r.status for r in stuck] == [RunStatus.ABANDONED]


def test_shutdown_grace_bounds_the_wait_for_running_jobs(tmp_path: Path) -> None:
    project = write_project(tmp_path, extra_config="")
    toml = project / "tickwork.toml"
    toml.write_text(toml.read_text().replace('node_id = "lc-node"', 'node_id = "lc-node"\nshutdown_grace = 0.5'))
    process = subprocess.Popen(
        [*tickwork_command(), "run"], cwd=project, env=env_for(project, "stuck"), stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for_start(project, process)
        process.send_signal(signal.SIGTERM)
        err = process.communicate(timeout=PROCESS_TIMEOUT_S)[1]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert "waiting up to 0.5s (scheduler.shutdown_grace)" in err
    assert "stopped waiting with 1 job(s) still running; they are recorded abandoned" in err
    assert [r.status for r in history(project) if r.schedule == "stuck"] == [RunStatus.ABANDONED]


def test_a_plugin_installed_as_a_dist_info_receives_the_hooks(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project")
    site = tmp_path / "site"
    (site / "observer_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "observer_plugin.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    (site / "observer_plugin-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: observer-plugin\nVersion: 1.0\n", encoding="utf-8"
    )
    (site / "observer_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[tickwork]\nobserver = observer_plugin\n", encoding="utf-8"
    )
    out = tmp_path / "observed.jsonl"
    result = run_for(project, 3, "quick", PYTHONPATH=str(site), OBSERVER_OUT=str(out))
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in lines(out)]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "node_started" and kinds.count("node_stopping") == 1
    # After it only the ends recorded while stopping: runs that end during the shutdown grace and
    # ends still gathered for their batch (scheduler.end_batch_window).
    assert set(kinds[kinds.index("node_stopping") + 1 :]) <= {"runs_finished", "fires_skipped"}
    assert events[0] == {"event": "node_started", "node_id": "lc-node", "config": "tickwork.toml"}
    assert {"event": "membership_changed", "members": ["lc-node"], "owned": None} in events
    finished = [run for e in events if e["event"] == "runs_finished" for run in e["runs"]]
    assert ["quick", "succeeded"] in finished
    # Its runs_started raised: logged once with the plugin's name, and the node kept running.
    assert result.stderr.count("plugin observer: tickwork_runs_started raised; ignored") == 1
    assert "observer bug in runs_started" in result.stderr
    quick = [r for r in history(project) if r.schedule == "quick"]
    assert len(finished) == len(quick) >= 2


def test_the_banner_lists_twenty_jobs_then_counts_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    lines_ = ["import tickwork", ""]
    for i in range(25):
        lines_ += ["", f'@tickwork.every("{i + 1}m", name="job-{i:02d}")', f"def job_{i}() -> None:", "    pass", ""]
    (tmp_path / "many_jobs.py").write_text("\n".join(lines_), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    caplog.set_level("INFO", "tickwork.node")
    node = tickwork.Node.from_config({"store": {"path": str(tmp_path / "many.db")}}, jobs=["many_jobs"])
    node.open()
    node.shutdown()
    listed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("  job ")]
    assert len(listed) == 20
    assert listed[0].startswith("  job job-00: interval '1m' UTC, next fire 20")
    assert "  ... and 5 more declared job(s) (tickwork jobs list shows them all)" in caplog.messages
