"""Embedding a node in an application, as the examples in docs/embedding.md do: plain asyncio and
FastAPI served by uvicorn (real processes, real HTTP), and an application that exits without
stopping its node."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import tickwork
from tests.support.paths import REPO
from tests.support.processes import PROCESS_TIMEOUT_S, tickwork_command
from tests.support.servers.base import free_port
from tickwork.config import parse
from tickwork.node import build_store
from tickwork.node.process import GC_DEFAULT_YOUNG_THRESHOLD
from tickwork.plugin.manager import plugin_manager_for
from tickwork_metrics.settings import MetricsConfig

pytestmark = pytest.mark.slow


def write_config(tmp_path: Path, node_id: str) -> Path:
    config = tmp_path / "tickwork.toml"
    config.write_text(
        textwrap.dedent(f"""
        [scheduler]
        node_id = "{node_id}"

        [store]
        path = "{tmp_path / "app.db"}"
        """),
        encoding="utf-8",
    )
    return config


def app_env(config: Path) -> dict[str, str]:
    env = dict(os.environ, TICKWORK_CONFIG=str(config), PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def assert_left_cleanly(tmp_path: Path, config: Path) -> None:
    """Nothing is running in the store and ``tickwork nodes --json`` lists no live node."""
    with tickwork.connect(config) as admin:
        assert [s.name for s in admin.list(state="running")] == []
        assert admin.history(status="running") == []
        assert admin.history(limit=1)  # something did run
    nodes = subprocess.run(
        [*tickwork_command(), "nodes", "--json"], env=app_env(config), capture_output=True, text=True, check=True
    )
    assert [json.loads(line) for line in nodes.stdout.splitlines() if json.loads(line)["live"]] == []


def test_the_asyncio_example_fires_and_leaves_no_trace(tmp_path: Path) -> None:
    config = write_config(tmp_path, "asyncio-app")
    result = subprocess.run(
        [sys.executable, "-m", "examples.embedding.asyncio_app"],
        cwd=tmp_path,
        env=app_env(config),
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["daily-report fired", "node stopped"]
    assert "report for ops@example.com" in result.stderr  # the job ran, with current_run()
    assert "ping " in result.stderr  # the declared job received its RunContext
    assert "alembic" not in result.stderr  # the app logs at INFO; Alembic's lines stay out
    assert_left_cleanly(tmp_path, config)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


def test_the_fastapi_example_under_uvicorn(tmp_path: Path) -> None:
    config = write_config(tmp_path, "fastapi-app")
    port = free_port()
    log_path = tmp_path / "uvicorn.log"
    with log_path.open("w", encoding="utf-8") as log_file:
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "examples.embedding.fastapi_app:app", "--port", str(port)],
            cwd=tmp_path,
            env=app_env(config),
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + PROCESS_TIMEOUT_S
            while get(f"{base}/healthz")[0] != 200:
                assert server.poll() is None, log_path.read_text()
                assert time.monotonic() < deadline, "uvicorn never answered"
                time.sleep(0.1)
            assert json.loads(get(f"{base}/healthz")[1]) == {"ok": True, "reason": "ok"}
            request = urllib.request.Request(f"{base}/reports/ops", method="POST")
            with urllib.request.urlopen(request, timeout=5) as response:
                assert json.loads(response.read())["name"] == "report-ops"
            while not [r for r in json.loads(get(f"{base}/runs/report-ops")[1]) if r["status"] == "succeeded"]:
                assert time.monotonic() < deadline, "the report never ran"
                time.sleep(0.1)
        finally:
            server.send_signal(signal.SIGINT)  # uvicorn ends the lifespan: the node stops
            server.wait(timeout=PROCESS_TIMEOUT_S)
    output = log_path.read_text(encoding="utf-8")
    assert server.returncode == 0, output
    assert "Traceback" not in output
    assert_left_cleanly(tmp_path, config)


EXITS_WITHOUT_STOP = """
import time
import tickwork

node = tickwork.Node.from_config()
node.start()
while not [r for r in node.admin.history(limit=5) if r.status.value == "succeeded"]:
    time.sleep(0.05)
print("started; exiting without stop()", flush=True)
"""


def test_an_application_that_exits_without_stopping_leaves_no_ghost_node(tmp_path: Path) -> None:
    config = write_config(tmp_path, "forgetful-app")
    jobs = 'import tickwork\n\n\n@tickwork.every("1s", name="p")\ndef p() -> None:\n    pass\n'
    (tmp_path / "forgetful_jobs.py").write_text(jobs, encoding="utf-8")
    config.write_text(config.read_text().replace("[scheduler]", '[scheduler]\njobs = ["forgetful_jobs"]'))
    env = app_env(config)
    env["PYTHONPATH"] += os.pathsep + str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", EXITS_WITHOUT_STOP],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "started; exiting without stop()\n"
    assert_left_cleanly(tmp_path, config)


def test_from_config_takes_a_dict_and_overrides(tmp_path: Path) -> None:
    node = tickwork.Node.from_config({"store": {"path": str(tmp_path / "a.db")}}, node_id="n-1", max_in_flight=5)
    assert (node.node_id, node.config.scheduler.max_in_flight) == ("n-1", 5)
    with node:
        assert node.running and node.health() == (True, "ok")
    assert not node.running and node.health() == (False, "node is not running")
    with pytest.raises(tickwork.ConfigError, match=r"scheduler\.max_inflight: unknown key"):
        tickwork.Node.from_config({"store": {"path": str(tmp_path / "a.db")}}, max_inflight=5)
    with pytest.raises(tickwork.ConfigError, match=r"nope\.toml.*does not exist"):
        tickwork.Node.from_config(tmp_path / "nope.toml")


def test_from_config_overrides_update_the_file_s_tables(tmp_path: Path) -> None:
    config = write_config(tmp_path, "from-file")
    node = tickwork.Node.from_config(config, store={"busy_timeout": 9.0}, metrics={"port": 0})
    assert node.config.store.options == {"path": str(tmp_path / "app.db"), "busy_timeout": 9.0}
    assert (node.node_id, node.config.find_table(MetricsConfig)) == ("from-file", MetricsConfig(port=0))
    other = tickwork.Node.from_config(config, store={"plugin": "postgres", "url": "postgresql://u@h/db"})
    assert other.config.store.options == {"url": "postgresql://u@h/db"}  # not the SQLite path


DJANGO_SITE = REPO / "examples" / "embedding" / "django_site"

WAITS_FOR_A_RUN = """
import time
from django.apps import apps

node = apps.get_app_config("reports").tickwork
while not [r for r in node.store.history(schedule="reports.refresh") if r.status.value == "succeeded"]:
    time.sleep(0.05)
print("refreshed; exiting", flush=True)
"""


def django_env(config: Path, **extra: str) -> dict[str, str]:
    env = app_env(config)
    env["PYTHONPATH"] = os.pathsep.join([str(DJANGO_SITE), env["PYTHONPATH"]])
    env.update(extra)
    return env


def test_the_django_app_config_runs_a_node_in_the_django_process(tmp_path: Path) -> None:
    config = write_config(tmp_path, "django-embedded")
    result = subprocess.run(
        [sys.executable, str(DJANGO_SITE / "manage.py"), "shell", "-c", WAITS_FOR_A_RUN],
        cwd=tmp_path,
        env=django_env(config, TICKWORK_EMBED="1"),
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("refreshed; exiting\n")  # Django's shell may print a line first
    assert "refreshing reports for ops@example.com" in result.stderr  # the job saw Django's settings
    assert_left_cleanly(tmp_path, config)  # stopped at exit, without the app calling stop()


def test_the_django_management_command_runs_a_node_until_sigterm(tmp_path: Path) -> None:
    config = write_config(tmp_path, "django-command")
    log_path = tmp_path / "command.log"
    with log_path.open("w", encoding="utf-8") as log_file:
        command = subprocess.Popen(
            [sys.executable, str(DJANGO_SITE / "manage.py"), "tickwork_node"],
            cwd=tmp_path,
            env=django_env(config),
            stderr=log_file,
        )
        try:
            deadline = time.monotonic() + PROCESS_TIMEOUT_S
            while "refreshing reports for ops@example.com" not in log_path.read_text(encoding="utf-8"):
                assert command.poll() is None, log_path.read_text(encoding="utf-8")
                assert time.monotonic() < deadline, "the job never ran"
                time.sleep(0.05)
        finally:
            command.send_signal(signal.SIGTERM)
            command.wait(timeout=PROCESS_TIMEOUT_S)
    assert command.returncode == 0, log_path.read_text(encoding="utf-8")
    assert_left_cleanly(tmp_path, config)


def test_a_stopped_node_does_not_start_again(tmp_path: Path) -> None:
    node = tickwork.Node.from_config({"store": {"path": str(tmp_path / "once.db")}}, node_id="once")
    with node:
        pass
    with pytest.raises(RuntimeError, match="node once was stopped; build a new Node to run again"):
        node.start()


def test_shutdown_of_a_started_node_waits_for_its_loop_thread(tmp_path: Path) -> None:
    node = tickwork.Node.from_config({"store": {"path": str(tmp_path / "s.db")}}, node_id="shut")
    node.start()
    node.shutdown()  # as code written for open() + shutdown() does
    assert not node.running
    fresh = build_store(parse({"store": {"path": str(tmp_path / "s.db")}}), plugin_manager_for(parse({})))
    fresh.open()
    try:
        assert fresh.nodes() == []
    finally:
        fresh.close()


#: What :func:`gc_probe` saw, from the job threads of the node running in this process.
gc_seen: list[tuple[tuple[int, int, int], int]] = []


def gc_probe() -> None:
    """A job that records the garbage collector's thresholds and freeze count as it runs."""
    gc_seen.append((gc.get_threshold(), gc.get_freeze_count()))


def test_an_embedded_node_leaves_the_host_s_garbage_collector_alone(tmp_path: Path) -> None:
    before = gc.get_threshold()
    # The interpreter's default, which `tickwork run` would raise: the host's choice either way.
    gc.set_threshold(GC_DEFAULT_YOUNG_THRESHOLD, *before[1:])
    host = (gc.get_threshold(), gc.get_freeze_count())
    gc_seen.clear()
    try:
        with tickwork.Node.from_config({"store": {"path": str(tmp_path / "gc.db")}}, node_id="guest") as node:
            node.admin.add("gc-probe", "1h", f"{__name__}:gc_probe", kind="interval")
            node.admin.trigger("gc-probe")
            deadline = time.monotonic() + PROCESS_TIMEOUT_S  # a guard against a hang, not a timing
            while not [r for r in node.admin.history(schedule="gc-probe") if r.status.final]:
                assert time.monotonic() < deadline, "the probe never ran"
                time.sleep(0.02)
        assert gc_seen == [host]  # while the node ran
        assert (gc.get_threshold(), gc.get_freeze_count()) == host  # and after it stopped
    finally:
        gc.set_threshold(*before)
