"""The public admin API (``tickwork.connect``) on real SQLite and PostgreSQL stores, with runs made
by a real node and its local executor."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import tickwork
from tests.support.benchmarks import run_benchmark
from tests.support.nodes import run_due
from tests.support.servers.configs import BACKENDS, ConfigFor
from tickwork.config import parse
from tickwork.node import Node
from tickwork_mysql.store import MySQLStore
from tickwork_postgres.store import PostgresStore
from tickwork_sqlite.store import SQLiteStore

RECORD = "tests.support.jobs_for_tests:record"
BOOM = "tests.support.jobs_for_tests:boom"
WITH_ARGS = "tests.support.jobs_for_tests:with_args"
NODE_ID = "admin-test-node"


@pytest.fixture(params=BACKENDS)
def config(request: pytest.FixtureRequest, config_for: ConfigFor) -> dict[str, Any]:
    """A configuration (as a dict) whose store exists and is at the latest schema."""
    return config_for(request.param, migrated=True).as_dict(scheduler={"node_id": NODE_ID})


@pytest.fixture
def admin(config: dict[str, Any]) -> Iterator[tickwork.Admin]:
    with tickwork.connect(config) as a:
        yield a


def db_now(admin: tickwork.Admin) -> datetime:
    return admin.store().now()


def test_add_then_get_returns_every_field(admin: tickwork.Admin) -> None:
    before = db_now(admin)
    added = admin.add(
        "report", "0 9 * * *", WITH_ARGS, tz="Europe/Paris", args={"city": "Oslo"},
        timeout=12.5, retries=2, retry_backoff=3, misfire="once",
    )  # fmt: skip
    info = admin.get("report")
    assert info == added
    assert isinstance(info, tickwork.ScheduleInfo)
    assert (info.name, info.kind, info.expression, info.timezone) == ("report", "cron", "0 9 * * *", "Europe/Paris")
    assert (info.executor, info.target, info.arguments) == ("local", WITH_ARGS, {"city": "Oslo"})
    assert (info.timeout, info.retries, info.retry_backoff, info.misfire) == (12.5, 2, 3.0, tickwork.MisfirePolicy.ONCE)
    assert (info.enabled, info.state, info.running_on, info.module) == (True, tickwork.ScheduleState.IDLE, None, None)
    assert (info.last_run, info.last_status, info.last_run_at) == (None, None, None)
    assert info.next_fire == tickwork.next_fire_times("0 9 * * *", tz="Europe/Paris", after=before)[0]
    with pytest.raises(AttributeError):
        info.next_fire = None  # type: ignore[misc]


def test_add_of_a_taken_name_fails_unless_replace(admin: tickwork.Admin) -> None:
    admin.add("dup", "*/5 * * * *", RECORD)
    with pytest.raises(tickwork.ScheduleExistsError, match="a schedule named 'dup' already exists"):
        admin.add("dup", "0 3 * * *", RECORD)
    replaced = admin.add("dup", "0 3 * * *", RECORD, replace=True)
    assert replaced.expression == "0 3 * * *"
    assert admin.get("dup").next_fire == tickwork.next_fire_times("0 3 * * *", after=db_now(admin))[0]
    assert admin.count() == 1


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"expression": "61 * * * *"}, tickwork.TriggerError, "minute field: 61"),
        ({"tz": "Mars/Olympus"}, tickwork.TriggerError, "unknown IANA zone 'Mars/Olympus'"),
        ({"executor": "grpc"}, tickwork.PluginNotFoundError, "unknown executor plugin 'grpc'"),
        ({"executor": "http"}, tickwork.ConfigError, "executor 'http' is not configured"),
        ({"misfire": "never"}, tickwork.ConfigError, "'never' is not a valid MisfirePolicy; choose one of: skip"),
        ({"timeout": 0}, tickwork.ConfigError, "timeout: must be more than 0 s and at most 30 days"),
        (
            {"timeout": "NaN"},
            tickwork.ConfigError,
            "timeout: expected a finite number of seconds or a duration like '90s', '5m', '1h30m', got str 'NaN'",
        ),
        ({"timeout": "5x"}, tickwork.ConfigError, "got str '5x' .unknown unit 'x' in '5x'"),
        ({"timeout": math.nan}, tickwork.ConfigError, "timeout: expected a finite number of seconds, got float nan"),
        ({"timeout": True}, tickwork.ConfigError, "timeout: expected a finite number of seconds, got bool True"),
        ({"timeout": 1e300}, tickwork.ConfigError, "timeout: 1e\\+300 seconds is out of range"),
        ({"retry_backoff": math.inf}, tickwork.ConfigError, "retry_backoff: expected a finite number of seconds"),
        ({"target": "no_such_module_xyz:f"}, tickwork.ExecutorError, "cannot resolve target"),
        ({"target": WITH_ARGS, "args": {"cty": "x"}}, tickwork.ExecutorError, "does not accept cty"),
    ],
)
def test_add_validates_before_storing(
    admin: tickwork.Admin, kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    values: dict[str, Any] = {"expression": "* * * * *", "target": RECORD} | kwargs
    with pytest.raises(error, match=message.replace("(", r"\(")):
        admin.add("bad", **values)
    with pytest.raises(tickwork.ScheduleNotFoundError):
        admin.get("bad")


def test_add_many_checks_all_before_writing_any(admin: tickwork.Admin) -> None:
    with pytest.raises(tickwork.TriggerError):
        admin.add_many(
            [
                {"name": "one", "expression": "* * * * *", "target": RECORD},
                {"name": "two", "expression": "nonsense here", "target": RECORD, "kind": "cron"},
            ]
        )
    assert admin.count() == 0
    spec = tickwork.ScheduleSpec(name="three", trigger_kind="interval", expression="90s", target=RECORD)
    added = admin.add_many([{"name": "one", "expression": "* * * * *", "target": RECORD}, spec])
    assert [i.name for i in added] == ["one", "three"]
    assert {i.name for i in admin.list()} == {"one", "three"}


def test_list_orders_by_next_fire_filters_and_pages(admin: tickwork.Admin) -> None:
    admin.add("c-yearly", "0 0 1 1 *", RECORD)
    admin.add("a-minutely", "* * * * *", RECORD)
    admin.add("b-hourly", "0 * * * *", RECORD)
    admin.add("off-a", "* * * * *", RECORD, enabled=False)
    admin.add("off-b", "* * * * *", RECORD, enabled=False)
    names = [i.name for i in admin.list()]
    # Ties in next fire (the top of an hour) sort by name, which the names follow; disabled ones
    # (no next fire) come last, by name.
    assert names == ["a-minutely", "b-hourly", "c-yearly", "off-a", "off-b"]
    fires = [i.next_fire for i in admin.list(enabled=True)]
    assert fires == sorted(f for f in fires if f is not None) and None not in fires
    assert [i.name for i in admin.list(enabled=False)] == ["off-a", "off-b"]
    assert [i.name for i in admin.list(search="OFF")] == ["off-a", "off-b"]
    assert [i.name for i in admin.list(search="ly")] == ["a-minutely", "b-hourly", "c-yearly"]
    assert [i.name for i in admin.list(search="jobs_for_tests", limit=2, offset=1)] == ["b-hourly", "c-yearly"]
    assert admin.list(state="running") == []
    assert len(admin.list(state="idle")) == 5
    assert (admin.count(), admin.count(enabled=False), admin.count(search="hour")) == (5, 2, 1)
    # A LIKE wildcard in the search text is matched literally.
    assert admin.list(search="%") == []
    with pytest.raises(ValueError, match="'busy' is not a valid ScheduleState; choose one of: idle, running"):
        admin.list(state="busy")


def test_update_changes_fields_and_recomputes_the_next_fire_for_a_new_trigger(admin: tickwork.Admin) -> None:
    admin.add("job", "0 0 1 1 *", RECORD)
    admin.trigger("job")
    due_now = admin.get("job").next_fire
    # Not the trigger: the pending "run now" is kept.
    kept = admin.update("job", timeout=5, retries=1)
    assert (kept.timeout, kept.retries, kept.next_fire) == (5.0, 1, due_now)
    assert kept.expression == "0 0 1 1 *"
    # A new expression: its kind is recognised again and the next fire computed from now.
    before = db_now(admin)
    changed = admin.update("job", expression="90s")
    assert (changed.kind, changed.expression, changed.timeout) == ("interval", "90s", 5.0)
    assert changed.next_fire == tickwork.next_fire_times("90s", after=before)[0]
    assert admin.update("job", enabled=False).next_fire is None
    assert admin.update("job", enabled=True).next_fire is not None
    with pytest.raises(tickwork.ConfigError, match="update: unknown field"):
        admin.update("job", expresion="* * * * *")
    with pytest.raises(tickwork.TriggerError):
        admin.update("job", expression="61 * * * *", kind="cron")
    assert admin.get("job").expression == "90s"
    with pytest.raises(tickwork.ScheduleNotFoundError, match="no schedule named 'ghost'"):
        admin.update("ghost", timeout=3)


def test_enable_disable_trigger_remove(admin: tickwork.Admin) -> None:
    admin.add("x", "0 0 1 1 *", RECORD)
    assert admin.disable("x").next_fire is None
    with pytest.raises(tickwork.TickworkError, match="schedule 'x' is disabled; enable it first"):
        admin.trigger("x")
    before = db_now(admin)
    enabled = admin.enable("x")
    assert enabled.enabled and enabled.next_fire == tickwork.next_fire_times("0 0 1 1 *", after=before)[0]
    triggered = admin.trigger("x")
    assert triggered.next_fire is not None and before <= triggered.next_fire <= db_now(admin)
    assert admin.remove("x").name == "x"
    for action in (admin.enable, admin.disable, admin.trigger, admin.remove, admin.get):
        with pytest.raises(tickwork.ScheduleNotFoundError):
            action("x")


def test_history_filters_and_last_run(admin: tickwork.Admin, config: dict[str, Any]) -> None:
    admin.add("good", "0 0 1 1 *", RECORD)
    admin.add("bad", "0 0 1 1 *", BOOM)
    admin.trigger("good")
    admin.trigger("bad")
    run_due(config)
    admin.trigger("good")
    run_due(config)

    runs = admin.history()
    assert [r.schedule for r in runs].count("good") == 2 and len(runs) == 3
    assert all(isinstance(r, tickwork.RunRecord) for r in runs)
    times = [r.scheduled_for for r in runs]
    assert times == sorted(times, reverse=True)
    [failed] = admin.history(status="failed")
    assert (failed.schedule, failed.status, failed.node, failed.attempt) == ("bad", "failed", NODE_ID, 1)
    assert "the job failed on purpose" in (failed.error or "")
    assert len(admin.history(status=["failed", "succeeded"])) == 3
    assert [r.schedule for r in admin.history(schedule="good", limit=1)] == ["good"]
    assert admin.history(schedule="good", limit=1)[0].scheduled_for == max(times)
    assert admin.history(node="another-node") == []
    assert len(admin.history(node=NODE_ID)) == 3
    latest = max(times)
    assert [r.scheduled_for for r in admin.history(since=latest)] == [latest]
    assert latest not in [r.scheduled_for for r in admin.history(until=latest)]
    assert len(admin.history(until=latest)) == 2
    # A timedelta is that long before the database clock.
    assert admin.history(since=timedelta(hours=1)) == runs
    assert admin.history(until=timedelta(hours=1)) == []
    with pytest.raises(ValueError, match="since: must be a timezone-aware datetime"):
        admin.history(since=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="'exploded' is not a valid RunStatus"):
        admin.history(status="exploded")
    with pytest.raises(tickwork.ScheduleNotFoundError):
        admin.history(schedule="nope")

    good, bad = admin.get("good"), admin.get("bad")
    assert (good.last_status, good.last_run_at) == (tickwork.RunStatus.SUCCEEDED, latest)
    assert bad.last_status is tickwork.RunStatus.FAILED
    assert {i.name: i.last_status for i in admin.list()} == {
        "good": tickwork.RunStatus.SUCCEEDED,
        "bad": tickwork.RunStatus.FAILED,
    }


def test_nodes_tell_live_from_dead_by_heartbeat_age(admin: tickwork.Admin, config: dict[str, Any]) -> None:
    node = Node(parse(config))
    node.start()
    try:
        [live] = admin.nodes()
    finally:
        node.shutdown()
    assert isinstance(live, tickwork.NodeInfo)
    assert (live.id, live.live) == (NODE_ID, True)
    assert 0 <= live.heartbeat_age <= admin.node_ttl()
    assert admin.nodes() == []  # a node that stopped cleanly leaves

    # A node that exited without leaving: its last heartbeat, written an hour ago by the database's
    # own reckoning, stays behind until a live node removes it.
    ghost_clock = db_now(admin) - timedelta(hours=1)
    options = dict(config["store"])
    plugin = options.pop("plugin", "sqlite")
    store = {"sqlite": SQLiteStore, "postgres": PostgresStore, "mysql": MySQLStore}[plugin](
        **options, clock=lambda: ghost_clock
    )
    store.open()
    try:
        store.heartbeat("ghost")
    finally:
        store.close()
    [ghost] = admin.nodes()
    assert (ghost.id, ghost.live) == ("ghost", False)
    assert ghost.heartbeat_age >= 3600
    assert ghost.as_json()["live"] is False


def test_reads_never_create_a_missing_sqlite_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TICKWORK_CONFIG", raising=False)
    config = tmp_path / "site.toml"
    config.write_text('[store]\npath = "missing.db"\n', encoding="utf-8")
    with tickwork.connect(config) as admin:
        for read in (admin.list, admin.count, admin.history, admin.nodes, lambda: admin.get("x")):
            with pytest.raises(tickwork.DatabaseMissingError) as info:
                read()
            assert str(info.value) == (
                f"SQLite database 'missing.db' does not exist (the store of {config}); start a node with "
                "that config or run `tickwork db upgrade` to create it"
            )
    with tickwork.connect() as admin, pytest.raises(tickwork.DatabaseMissingError, match="no config file was"):
        admin.list()
    assert sorted(os.listdir(tmp_path)) == ["site.toml"]
    # A write creates the store, as a node would.
    with tickwork.connect(path=config) as admin:
        admin.add("first", "* * * * *", RECORD)
        assert [i.name for i in admin.list()] == ["first"]
    assert (tmp_path / "missing.db").is_file()


def test_connect_accepts_a_path_a_dict_or_a_config(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text(f'[store]\npath = "{tmp_path / "x.db"}"\n', encoding="utf-8")
    from tickwork.config import load

    for source in (str(path), path, load(path)):
        with tickwork.connect(source) as admin:
            assert admin.config.store.options == {"path": str(tmp_path / "x.db")}
    with tickwork.connect({"store": {"path": "y.db"}}) as admin:
        assert admin.config.store.options == {"path": "y.db"}
    with pytest.raises(tickwork.ConfigError, match="unknown table or key 'stor'"):
        tickwork.connect({"stor": {}})
    with pytest.raises(TypeError):
        tickwork.connect(str(path), path=str(path))


def test_the_http_executor_is_accepted_once_configured(tmp_path: Path) -> None:
    config = {"store": {"path": str(tmp_path / "h.db")}, "executor": {"http": {}}}
    with tickwork.connect(config) as admin:
        info = admin.add("hook", "0 3 * * *", "https://example.com/hook", executor="http")
        assert (info.executor, info.target) == ("http", "https://example.com/hook")


def test_the_list_benchmark_runs_on_a_tiny_store() -> None:
    done = run_benchmark("bench_admin_list.py", "--schedules", "30", "--repeat", "1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "sqlite, 30 schedules, page 50, median of 1"
    assert [line.split("  ")[1].strip() for line in lines[1:]] == [
        "list first page",
        "list page at half",
        "list search page",
        "count",
        "get",
    ]
