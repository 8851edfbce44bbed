"""Per-schedule health driven by a real node, on SQLite and PostgreSQL: failing, overdue,
paused and late schedules, as the admin API and a real ``tickwork check`` process see them."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support.benchmarks import run_benchmark
from tests.support.probe import check, counts_of, lines_of
from tests.support.servers.configs import ConfigFor
from tickwork.admin.api import Admin, connect
from tickwork.admin.health import Health, HealthPolicy
from tickwork.config import parse
from tickwork.node import Node
from tickwork.scheduling.localtime import local_time
from tickwork.structures import ScheduleSpec

WAIT_S = 60  # guard against a hung node; not a timing assertion


def wait_for(what: str, condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


class World:
    """A store, its config file, an admin and one node."""

    def __init__(self, tmp_path: Path, store_toml: str, store: dict[str, str]) -> None:
        self.tmp = tmp_path
        self.toml = tmp_path / "tickwork.toml"
        self.toml.write_text(store_toml + '[scheduler]\nnode_id = "only"\nlookahead = 0\n')
        self.config = parse({"store": store, "scheduler": {"node_id": "only", "lookahead": 0}})
        self.admin: Admin = connect(self.config)
        self.node: Node | None = None

    def start(self) -> None:
        self.node = Node(self.config)
        self.node.start()

    def stop(self) -> None:
        if self.node is not None:
            self.node.stop()
            self.node = None

    def health(self, name: str, policy: HealthPolicy | None = None) -> Health:
        if policy is not None:
            self.admin.health_policy = policy
        info = self.admin.get(name)
        assert info.health is not None
        return info.health.state


@pytest.fixture(params=["sqlite", "postgres"])
def world(request: pytest.FixtureRequest, config_for: ConfigFor, tmp_path: Path) -> Iterator[World]:
    store = config_for(request.param, migrated=True)
    w = World(tmp_path, store.toml(), store.store)
    try:
        yield w
    finally:
        w.stop()
        w.admin.close()


def test_failing_and_paused_then_all_recover(world: World) -> None:
    flag = world.tmp / "broken"
    flag.write_text("")
    world.admin.add("flaky", "1s", "tests.support.health_jobs:fails_while", args={"flag": str(flag)})
    world.admin.add("steady", "1s", "tests.support.health_jobs:fine")
    world.admin.add("forgotten", "1h", "tests.support.health_jobs:fine", enabled=False)
    assert world.health("forgotten") is Health.PAUSED
    world.start()

    def failures() -> int:
        info = world.admin.get("flaky")
        assert info.health is not None
        return info.health.consecutive_failures

    wait_for("three failures in a row", lambda: failures() >= 3)
    info = world.admin.get("flaky")
    assert info.health is not None
    n = info.health.consecutive_failures
    assert info.health.state is Health.FAILING
    assert f"{n} failures in a row, never succeeded" in info.health.reason
    assert "RuntimeError: failing while broken exists" in info.health.reason
    # With a threshold above the streak it is not failing (yet).
    assert world.health("flaky", HealthPolicy(max_failures=n + 100)) is Health.HEALTHY
    world.admin.health_policy = HealthPolicy()
    assert world.health("steady") is Health.HEALTHY

    result = check(world.toml)
    assert result.returncode == 1, result.stderr
    # Disabled on purpose: listed and counted apart; the failing one fails the check.
    assert lines_of(result) == {"flaky": "failing", "forgotten": "disabled"}
    assert counts_of(result).startswith("3 schedules: 1 healthy, 1 unhealthy, 0 paused, 1 disabled")
    *as_json, summary = [json.loads(line) for line in check(world.toml, "--json").stdout.splitlines()]
    assert {o["name"]: (o["state"], o["group"], o["fails_check"]) for o in as_json} == {
        "flaky": ("failing", "unhealthy", True),
        "forgotten": ("paused", "disabled", False),
    }
    assert summary["summary"] == {
        "schedules": 3,
        "healthy": 1,
        "unhealthy": 1,
        "paused": 0,
        "disabled": 1,
        "strict": False,
        "ok": False,
    }
    only = check(world.toml, "--schedule", "steady")
    assert (only.returncode, only.stdout) == (0, "1 schedule: 1 healthy, 0 unhealthy, 0 paused, 0 disabled\n")

    flag.unlink()
    world.admin.enable("forgotten")
    wait_for("flaky to succeed", lambda: world.health("flaky") is Health.HEALTHY)
    recovered = check(world.toml)
    assert (recovered.returncode, lines_of(recovered)) == (0, {}), recovered.stderr
    assert counts_of(recovered) == "3 schedules: 3 healthy, 0 unhealthy, 0 paused, 0 disabled"
    assert "last success" in world.admin.get("flaky").health.reason  # type: ignore[union-attr]


def test_a_schedule_whose_only_node_stopped_becomes_overdue(world: World) -> None:
    world.admin.add("every-second", "1s", "tests.support.health_jobs:fine")
    world.start()
    wait_for("a success", lambda: world.admin.history(schedule="every-second", status="succeeded", limit=1) != [])
    world.stop()
    margin = HealthPolicy(overdue_margin=timedelta(seconds=1))
    # Its next fire is at most a second away: past the one-second margin soon after.
    wait_for("overdue", lambda: world.health("every-second", margin) is Health.OVERDUE)
    info = world.admin.get("every-second")
    assert info.health is not None
    # In the schedule's zone (UTC here), whole seconds: 2026-11-26 10:04:05Z.
    assert info.health.reason.startswith(f"the fire due at {local_time(info.next_fire, 'UTC')} ")
    assert "was not run within 1s; last success at " in info.health.reason

    result = check(world.toml, "--overdue-margin", "1s")
    assert result.returncode == 1
    assert lines_of(result) == {"every-second": "overdue"}
    # Within a margin of an hour it is not overdue.
    relaxed = check(world.toml, "--overdue-margin", "1h")
    assert (relaxed.returncode, lines_of(relaxed)) == (0, {})

    world.start()
    wait_for("a node to run it again", lambda: world.health("every-second", margin) is Health.HEALTHY)


def test_a_run_longer_than_usual_is_late(world: World) -> None:
    flag = world.tmp / "slow"
    world.admin.add("usually-quick", "1s", "tests.support.health_jobs:slow_while", args={"flag": str(flag)})
    world.start()
    wait_for(
        "three quick runs",
        lambda: len(world.admin.history(schedule="usually-quick", status="succeeded", limit=3)) == 3,
    )
    flag.write_text("")
    policy = HealthPolicy(overdue_margin=timedelta(seconds=1))
    wait_for("late", lambda: world.health("usually-quick", policy) is Health.LATE)
    info = world.admin.get("usually-quick")
    assert info.health is not None
    assert "on only, usually" in info.health.reason
    flag.unlink()
    wait_for("healthy again", lambda: world.health("usually-quick", policy) is Health.HEALTHY)


def test_a_schedule_its_node_cannot_handle_is_parked_until_enabled_again(world: World) -> None:
    # Written through the store: the admin API refuses an executor the configuration lacks, but
    # another node's configuration (or an older one) may have had it.
    store = world.admin.store(write=True)
    store.add(
        ScheduleSpec("pigeon", "interval", "1s", "tests.support.health_jobs:fine", executor="carrier-pigeon"),
        store.now(),
    )
    world.start()
    wait_for("the schedule to be parked", lambda: world.health("pigeon") is Health.PARKED)
    info = world.admin.get("pigeon")
    assert info.health is not None
    assert info.health.reason.startswith("a node could not handle it: ")
    assert "'carrier-pigeon' is not configured on node only" in info.health.reason
    result = check(world.toml)
    assert (result.returncode, lines_of(result)) == (1, {"pigeon": "parked"})


def test_check_rejects_an_unknown_schedule_and_bad_options(world: World) -> None:
    world.admin.add("one", "1h", "tests.support.health_jobs:fine")
    unknown = check(world.toml, "--schedule", "nope")
    assert unknown.returncode == 1
    assert "nope" in unknown.stderr
    bad = check(world.toml, "--overdue-margin", "soon")
    assert bad.returncode == 2
    assert "--overdue-margin" in bad.stderr
    assert check(world.toml).returncode == 0


def test_the_health_benchmark_runs_and_reads_by_index() -> None:
    """benchmarks/bench_health.py at a tiny size (the lead times it at 100,000): it works, and
    the per-schedule read is a search of the runs' fire index, never a scan."""
    done = run_benchmark("bench_health.py", "--schedules", "120", "--repeat", "1", timeout=WAIT_S * 2)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "sqlite, 120 schedules, 10 runs each, page 50, median of 1"
    assert [line.split("  ")[1].strip() for line in lines[1:6]] == [
        "list first page",
        "page without health",
        "get",
        "check one",
        "count health=failing",
    ]
    assert lines[6] == "plan of one recent_runs read:"
    assert "USING INDEX sqlite_autoindex_tickwork_runs_1 (schedule_id=?)" in lines[7]
    assert not any("TEMP B-TREE" in line or "SCAN" in line for line in lines[7:])
