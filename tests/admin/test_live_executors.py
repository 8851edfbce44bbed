"""A schedule's executor checked against the live nodes, as a user drives it: a real node
process (``tickwork run``, on a SQLite file and on PostgreSQL) with only ``local`` configured,
and ``tickwork jobs add``/``update``/``add --from``/``nodes`` as subprocesses. A node publishes
the executors it runs in its record; ``jobs add`` refuses a schedule a live node would park,
naming the node and what it runs, unless told to skip the check (``--no-node-check``), and says
when it could not ask (no live node, a node of an older tickwork)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

import tickwork
from tests.support.forkedcli import run_tickwork
from tests.support.servers.configs import ConfigFor, StoreConfig
from tickwork.admin.info import NodeInfo
from tickwork.admin.liveexecutors import LiveExecutors
from tickwork.errors import ConfigError

HOOK = "https://example.invalid/hook"
#: What every refusal says to do (docs/cli.md quotes it).
FIX = "configure [executor.http] on the nodes and restart them"


def tickwork_cli(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKWORK_") and k != "COLUMNS"}
    return run_tickwork(args, cwd=workdir, env=env, timeout=60)


@dataclass
class Setup:
    """A node's configuration (``node.toml``: only ``local``) and an admin's (``admin.toml``: the
    same store, and an ``[executor.http]`` table), in one directory."""

    workdir: Path
    store: StoreConfig

    def cli(self, *args: str, config: str = "admin.toml") -> subprocess.CompletedProcess[str]:
        return tickwork_cli(self.workdir, *args, "-c", config)

    def write(self, name: str, tables: str) -> Path:
        path = self.workdir / name
        path.write_text(self.store.toml() + tables, encoding="utf-8")
        return path


def live_nodes(setup: Setup) -> list[dict[str, object]]:
    shown = setup.cli("nodes", "--json")
    assert shown.returncode == 0, shown.stderr
    return [node for node in map(json.loads, shown.stdout.splitlines()) if node["live"]]


@pytest.fixture
def node_process() -> Iterator[list[subprocess.Popen[str]]]:
    """The node processes a test starts, stopped (SIGTERM: the graceful way) when it ends."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in started:
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_node(setup: Setup, procs: list[subprocess.Popen[str]], config: str, node_id: str) -> subprocess.Popen[str]:
    """``tickwork run -c CONFIG`` in the background, returned once ``tickwork nodes`` lists it live."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKWORK_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tickwork.cli", "run", "-c", config],
        cwd=setup.workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    procs.append(proc)
    deadline = time.monotonic() + 60  # a guard against a node that never starts, not a timing
    while not any(n["id"] == node_id for n in (live_nodes(setup) if _has_db(setup) else [])):
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, f"node {node_id} did not come up"
        time.sleep(0.2)
    return proc


def _has_db(setup: Setup) -> bool:
    path = setup.store.store.get("path")
    return path is None or Path(path).exists()


def stop_node(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


@pytest.fixture(params=["sqlite", "postgres"])
def setup(request: pytest.FixtureRequest, config_for: ConfigFor, tmp_path: Path) -> Setup:
    made = Setup(tmp_path, config_for(request.param, migrated=True))
    made.write("node.toml", '\n[scheduler]\nnode_id = "only-local"\nmax_sleep = 0.2\n')
    made.write("admin.toml", "\n[executor.http]\n")
    return made


def test_a_schedule_a_live_node_would_park_is_refused_naming_the_node(
    setup: Setup, node_process: list[subprocess.Popen[str]]
) -> None:
    node = start_node(setup, node_process, "node.toml", "only-local")
    (listed,) = live_nodes(setup)
    assert listed["executors"] == ["local"]

    refused = setup.cli("jobs", "add", "x", "* * * * *", "mod:f", "--executor", "http")
    assert refused.returncode == 2 and refused.stdout == ""
    (line,) = refused.stderr.splitlines()
    assert line.startswith("tickwork: error: executor 'http' is not configured on live node only-local (runs: local)")
    assert FIX in line and "--no-node-check" in line
    # The node's own file has no [executor.http] either: the live node is what it is told, first.
    assert setup.cli("jobs", "add", "x", "* * * * *", HOOK, "--executor", "http", config="node.toml").stderr == (
        refused.stderr.replace("'mod:f'", HOOK)  # (the target is not in the message)
    )
    assert "x" not in setup.cli("jobs", "list", "--json").stdout

    # The local executor is run by the live node: added, and no note.
    added = setup.cli("jobs", "add", "daily", "0 3 * * *", "os:getcwd")
    assert (added.returncode, added.stderr) == (0, "") and added.stdout.startswith("added daily;")
    # Changing it to an executor the node lacks is refused the same way; a file too, by line.
    updated = setup.cli("jobs", "update", "daily", "--executor", "http", "--target", HOOK)
    assert updated.returncode == 2 and "on live node only-local (runs: local)" in updated.stderr
    (setup.workdir / "more.jsonl").write_text(
        json.dumps({"name": "a", "expression": "0 4 * * *", "target": "os:getcwd"})
        + "\n"
        + json.dumps({"name": "b", "expression": "0 5 * * *", "target": HOOK, "executor": "http"})
        + "\n",
        encoding="utf-8",
    )
    from_file = setup.cli("jobs", "add", "--from", "more.jsonl")
    assert from_file.returncode == 2 and "more.jsonl:2: executor 'http' is not configured on live node" in (
        from_file.stderr
    )
    listed_names = [json.loads(line)["name"] for line in setup.cli("jobs", "list", "--json").stdout.splitlines()]
    assert listed_names == ["daily"]  # nothing of the file was added

    # Deploying before the nodes: added, with a note that the live node will park it...
    forced = setup.cli("jobs", "add", "hook", "* * * * *", HOOK, "--executor", "http", "--no-node-check")
    assert forced.returncode == 0 and forced.stdout.startswith("added hook;"), forced.stderr
    assert forced.stderr == (
        "tickwork: note: not checked against the live nodes (--no-node-check): live node only-local does not run "
        "executor 'http' and will park its schedules until [executor.http] is configured there and it is "
        "restarted\n"
    )
    # ...which it does once the schedule is due: what the refusal protected against.
    assert setup.cli("jobs", "trigger", "hook").returncode == 0
    deadline = time.monotonic() + 60
    while (shown := json.loads(setup.cli("jobs", "show", "hook", "--json").stdout))["fault"] is None:
        assert time.monotonic() < deadline and node.poll() is None, "the node did not claim the schedule"
        time.sleep(0.2)
    assert "executor 'http' is not configured on node only-local" in shown["fault"]
    # Enabling it (the fix's last step) before the node runs http says it will park it again.
    enabled = setup.cli("jobs", "enable", "hook")
    assert enabled.returncode == 0 and enabled.stdout.startswith("enabled hook;")
    assert enabled.stderr == (
        "tickwork: note: live node only-local does not run executor 'http' and will park hook again: configure "
        "[executor.http] on the nodes and restart them\n"
    )
    assert setup.cli("jobs", "enable", "hook", "daily").stderr == (
        "tickwork: note: live node only-local does not run executor 'http' and will park hook again: configure "
        "[executor.http] on the nodes and restart them\n"
    )


def test_with_no_live_node_the_local_configuration_decides_and_says_so(
    setup: Setup, node_process: list[subprocess.Popen[str]]
) -> None:
    stop_node(start_node(setup, node_process, "node.toml", "only-local"))
    assert live_nodes(setup) == []  # a graceful stop removes the record
    added = setup.cli("jobs", "add", "hook", "* * * * *", HOOK, "--executor", "http")
    assert added.returncode == 0, added.stderr
    assert added.stderr == (
        "tickwork: note: no live node could be checked for executor 'http' (none is heartbeating); it was checked "
        "against admin.toml only: the nodes need an [executor.http] table in their own configuration, or they "
        "park schedules on it\n"
    )
    # The local check as before: the node's file does not configure it.
    refused = setup.cli("jobs", "add", "hook2", "* * * * *", HOOK, "--executor", "http", config="node.toml")
    assert refused.returncode == 2
    assert refused.stderr == (
        "tickwork: error: executor 'http' is not configured in node.toml, so no node would run it: add an "
        "[executor.http] table (configured executors: local)\n"
    )


def test_when_every_live_node_runs_it_the_local_file_need_not(
    setup: Setup, node_process: list[subprocess.Popen[str]]
) -> None:
    # On a hash ring, where a schedule is owned by two nodes: the rule is the same (docs/cluster.md).
    ring = '\n[membership]\nplugin = "hashring"\n'
    setup.write("http-node.toml", f'{ring}\n[scheduler]\nnode_id = "with-http"\nmax_sleep = 0.2\n\n[executor.http]\n')
    setup.write("ring-node.toml", f'{ring}\n[scheduler]\nnode_id = "only-local"\nmax_sleep = 0.2\n')
    start_node(setup, node_process, "http-node.toml", "with-http")
    (listed,) = live_nodes(setup)
    assert listed["executors"] == ["http", "local"]
    table = setup.cli("nodes", "--wide")
    assert table.stdout.split()[-1] == "http,local"  # the EXECUTORS column
    added = setup.cli("jobs", "add", "hook", "* * * * *", HOOK, "--executor", "http", config="node.toml")
    assert added.returncode == 0, added.stderr
    assert added.stderr == (
        "tickwork: note: the target was not checked here: executor 'http' is not configured in node.toml (the "
        "live nodes run it)\n"
    )
    # A second node without it joins: the schedule could now be parked, so a new one is refused.
    start_node(setup, node_process, "ring-node.toml", "only-local")
    refused = setup.cli("jobs", "add", "hook2", "* * * * *", HOOK, "--executor", "http")
    assert refused.returncode == 2
    assert "on live node only-local (runs: local); with-http runs it, but any live node may claim" in refused.stderr


def test_a_node_that_publishes_nothing_is_not_held_against_a_schedule(setup: Setup) -> None:
    # A node of an older tickwork registers and heartbeats but announces nothing: its record's
    # executors are NULL. The store API is what such a node calls.
    store = setup.store.build_store()
    store.open()
    try:
        assert store.register_node("old-node", "instance", 30.0) is None
        # It keeps heartbeating while the command runs, as a live node does: a loaded machine can
        # take longer than the membership's node_ttl to start the command.
        beating = threading.Event()

        def beat() -> None:
            while not beating.wait(0.5):
                store.heartbeat("old-node")

        store.heartbeat("old-node")
        beater = threading.Thread(target=beat, daemon=True)
        beater.start()
        try:
            added = setup.cli("jobs", "add", "hook", "* * * * *", HOOK, "--executor", "http")
            listed_nodes = setup.cli("nodes").stdout
            (listed,) = live_nodes(setup)
        finally:
            beating.set()
            beater.join()
        assert added.returncode == 0, added.stderr
        assert added.stderr.startswith(
            "tickwork: note: live node old-node does not publish which executors it runs (an older tickwork); "
            "executor 'http' was checked against admin.toml only"
        )
        assert listed["executors"] is None
        assert listed_nodes.split()[-1] == "-"
    finally:
        store.remove_node("old-node")
        store.close()


def test_the_admin_api_refuses_and_takes_check_nodes_false(
    setup: Setup, node_process: list[subprocess.Popen[str]]
) -> None:
    start_node(setup, node_process, "node.toml", "only-local")
    with tickwork.connect(setup.workdir / "admin.toml") as admin:
        with pytest.raises(ConfigError, match="not configured on live node only-local"):
            admin.add("hook", "* * * * *", HOOK, executor="http")
        with pytest.raises(ConfigError, match="not configured on live node only-local"):
            admin.add_many([{"name": "hook", "expression": "* * * * *", "target": HOOK, "executor": "http"}])
        assert admin.add("hook", "* * * * *", HOOK, executor="http", check_nodes=False).executor == "http"
        with pytest.raises(ConfigError, match="not configured on live node only-local"):
            admin.update("hook", timeout=5)
        assert admin.update("hook", timeout=5, check_nodes=False).timeout == 5
        (node,) = [n for n in admin.nodes() if n.live]
        assert node.executors == ("local",)
        assert admin.live_executors().check("local").run_by_live_nodes


def test_the_judgement_of_mixed_live_dead_and_older_nodes() -> None:
    at = datetime.now(UTC)

    def node(name: str, executors: tuple[str, ...] | None, *, live: bool = True) -> NodeInfo:
        return NodeInfo(name, at, at, 0.5 if live else 60.0, live, executors)

    many = [node(f"n{i}", ("local",)) for i in range(7)]
    others = [node("h", ("http", "local")), node("old", None), node("gone", ("local",), live=False)]
    check = LiveExecutors([*many, *others], "admin.toml").check("http")
    assert check.refused and [n.id for n in check.lacking] == [f"n{i}" for i in range(7)]  # not the dead one
    assert check.error().startswith(
        "executor 'http' is not configured on live nodes n0 (runs: local), n1 (runs: local), n2 (runs: local), "
        "n3 (runs: local), n4 (runs: local) and 2 more; h runs it, but any live node may claim the schedule"
    )
    # Only h and an older node live: not refused, but not vouched for either (the file decides).
    check = LiveExecutors(others, "admin.toml").check("http")
    assert (check.refused, check.run_by_live_nodes) == (False, False)
    assert check.note() == (
        "live node old does not publish which executors it runs (an older tickwork); executor 'http' was "
        "checked against admin.toml only"
    )
    with pytest.raises(ConfigError, match="not configured on live node solo"):
        LiveExecutors([node("solo", ("local",))], "admin.toml").judge("http")
    assert LiveExecutors([node("gone", ("local",), live=False)], "admin.toml").judge("http") is False
    assert LiveExecutors([node("h", ("http",))], "admin.toml").judge("http") is True
