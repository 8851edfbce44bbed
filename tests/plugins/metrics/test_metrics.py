"""The metrics plugin on a real ``tickwork run`` process: /metrics parsed by prometheus_client's
own parser, /healthz 200 while PostgreSQL runs and 503 while it is stopped."""

from __future__ import annotations

import os
import socket
import subprocess
import textwrap
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

import tickwork
from tests.support import planted
from tests.support.processes import PROCESS_TIMEOUT_S, tickwork_command
from tests.support.servers.base import free_port
from tests.support.servers.postgres import POSTGRES, PostgresServer
from tickwork.structures import ScheduleSpec

pytestmark = pytest.mark.slow

JOBS = """
import tickwork


@tickwork.cron("* * * * * *", name="tick")
def tick() -> None:
    pass
"""


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def wait_until(check: object, what: str, timeout: float = PROCESS_TIMEOUT_S, last: object = None) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        seen = f"; last: {last()}" if callable(last) else ""
        assert time.monotonic() < deadline, f"timed out waiting for {what}{seen}"
        time.sleep(0.1)


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


@pytest.fixture
def own_postgres() -> Iterator[tuple[PostgresServer, str]]:
    """A PostgreSQL server of this test alone: it is stopped and started again."""
    server = POSTGRES.start_throwaway(os.environ)
    assert server.throwaway is not None
    try:
        import psycopg

        with psycopg.connect(server.conninfo("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE metrics")
        # A password the trusting test server never checks: it must show up nowhere (banner,
        # /healthz reasons, logs of the outage).
        yield server, planted.with_password(server.url("metrics"))
    finally:
        server.throwaway.stop()


def test_metrics_and_health_of_a_running_node(tmp_path: Path, own_postgres: tuple[PostgresServer, str]) -> None:
    server, url = own_postgres
    port = free_port()
    (tmp_path / "metric_jobs.py").write_text(textwrap.dedent(JOBS), encoding="utf-8")
    (tmp_path / "tickwork.toml").write_text(
        textwrap.dedent(f"""
        [scheduler]
        jobs = ["metric_jobs"]
        node_id = "metrics-node"

        [store]
        plugin = "postgres"
        url = "{url}"

        [membership]
        plugin = "single"
        heartbeat_interval = 0.5
        node_ttl = 2.0

        [metrics]
        port = {port}
        """),
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != "TICKWORK_CONFIG"}
    subprocess.run([*tickwork_command(), "db", "upgrade"], cwd=tmp_path, env=env, check=True, capture_output=True)
    log_path = tmp_path / "node.log"
    log_file = log_path.open("w", encoding="utf-8")
    process = subprocess.Popen([*tickwork_command(), "run"], cwd=tmp_path, env=env, stderr=log_file, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _succeeded(base) > 0, "a succeeded run in /metrics")
        status, text = get(f"{base}/metrics")
        assert status == 200
        found = samples(text)
        assert found["tickwork_runs_total"]
        assert all(set(labels) == {"status"} for labels, _ in found["tickwork_runs_total"])
        lag_count = found["tickwork_fire_lag_seconds_count"][0][1]
        assert lag_count >= 1
        assert found["tickwork_fire_lag_seconds_bucket"][-1][0]["le"] == "+Inf"
        assert found["tickwork_run_duration_seconds_count"][0][1] >= 1
        assert found["tickwork_claims_total"][0][1] >= 1
        assert found["tickwork_claim_seconds_count"][0][1] >= 1
        assert found["tickwork_ring_members"][0][1] == 1
        assert found["tickwork_owned_buckets"][0][1] == 1024
        assert {labels["state"] for labels, _ in found["tickwork_schedules"]} == {"idle", "running", "disabled"}
        assert sum(value for _, value in found["tickwork_schedules"]) == 1
        for name in ("tickwork_in_flight", "tickwork_held", "tickwork_store_errors_total"):
            assert name in found
        # No per-schedule series: 1M schedules must not mean 1M series.
        assert not any("schedule" in labels for series in found.values() for labels, _ in series)
        assert get(f"{base}/healthz") == (200, "ok\n")

        assert server.throwaway is not None
        # Probe from a thread: the restart must run in this one (postgres dies with the thread
        # that started it).
        answers: list[tuple[int, str]] = []
        done = threading.Event()

        def probe() -> None:
            while not done.is_set():
                answers.append(get(f"{base}/healthz"))
                time.sleep(0.2)

        prober = threading.Thread(target=probe)
        prober.start()
        try:
            server.throwaway.restart(down_seconds=6.0)
        finally:
            done.set()
            prober.join()
        down = [reason for status, reason in answers if status == 503]
        assert down, answers
        assert all("store unreachable" in reason or "heartbeat is stale" in reason for reason in down), down
        wait_until(
            lambda: get(f"{base}/healthz") == (200, "ok\n"),
            "/healthz 200 once the database is back",
            last=lambda: get(f"{base}/healthz"),
        )
        errors = samples(get(f"{base}/metrics")[1])["tickwork_store_errors_total"][0][1]
        assert errors >= 1
    finally:
        process.terminate()
        process.wait(timeout=PROCESS_TIMEOUT_S)
        log_file.close()
    err = log_path.read_text(encoding="utf-8")
    assert process.returncode == 0, err
    assert f"metrics of node metrics-node on http://127.0.0.1:{port}/metrics" in err
    assert "store PostgreSQL database postgresql+psycopg://postgres:***@" in err  # the banner, masked
    assert planted.leaks([err, *down]) == []
    with socket.socket() as probe:  # the server was closed with the node
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def _succeeded(base: str) -> float:
    try:
        status, text = get(f"{base}/metrics")
    except OSError:
        return 0.0
    if status != 200:
        return 0.0
    runs = samples(text).get("tickwork_runs_total", [])
    return sum(value for labels, value in runs if labels.get("status") == "succeeded")


def test_a_port_in_use_fails_the_start_naming_the_key(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        node = tickwork.Node.from_config(
            {"store": {"path": str(tmp_path / "m.db")}, "metrics": {"port": port}}, node_id="busy-port"
        )
        with pytest.raises(tickwork.ConfigError, match=rf"metrics\.port: cannot listen on 127\.0\.0\.1:{port}"):
            node.start()
    assert not node.running


def test_a_metrics_table_with_the_plugin_blocked_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(tickwork.ConfigError, match=r"metrics: the metrics plugin is not loaded"):
        tickwork.Node.from_config(
            {"store": {"path": str(tmp_path / "m.db")}, "metrics": {}, "plugins": {"block": ["metrics"]}}
        )


def test_an_embedded_node_on_sqlite_serves_on_a_free_port(tmp_path: Path) -> None:
    from tickwork_metrics.plugin import port_of

    node = tickwork.Node.from_config(
        {"store": {"path": str(tmp_path / "m.db")}, "metrics": {"port": 0}}, node_id="sqlite-metrics"
    )
    with node:
        node.store.add(ScheduleSpec("on", "interval", "1h", "tests.support.context_jobs:noop"), None)
        node.store.add(ScheduleSpec("off", "interval", "1h", "tests.support.context_jobs:noop", enabled=False), None)
        port = port_of("sqlite-metrics")
        assert port is not None and port > 0
        status, text = get(f"http://127.0.0.1:{port}/metrics")
        assert status == 200
        counts = {labels["state"]: value for labels, value in samples(text)["tickwork_schedules"]}
        assert counts == {"idle": 1, "running": 0, "disabled": 1}
        assert get(f"http://127.0.0.1:{port}/nope")[0] == 404
    assert port_of("sqlite-metrics") is None
    with socket.socket() as probe:  # closed with the node
        assert probe.connect_ex(("127.0.0.1", port)) != 0
