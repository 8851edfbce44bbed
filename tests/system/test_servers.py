"""Tests of the suite's database servers (tests/support/servers/): which server is used, a fresh database per
test, the throwaway server started when none answers, and ``config_for``."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pymysql
import pytest
from sqlalchemy.engine import make_url

import tickwork
from tests.support.paths import REPO as REPO_ROOT
from tests.support.servers.base import OWNER_FILE, Provider, Server, ServerUnavailable, free_port, remove_stale_dirs
from tests.support.servers.configs import BACKENDS, ConfigFor
from tests.support.servers.mysql import MYSQL, MySQLServer
from tests.support.servers.postgres import POSTGRES, PostgresServer
from tickwork_mysql.store import MySQLStore

INNER_TIMEOUT_S = 240


# -- what the two databases' tests need to differ in --------------------------------------------------


def _pg_databases(server: Server) -> set[str]:
    assert isinstance(server, PostgresServer)
    with psycopg.connect(server.conninfo(server.maintenance_dbname)) as conn:
        return {row[0] for row in conn.execute("SELECT datname FROM pg_database").fetchall()}


def _pg_linger(server: Server, dbname: str) -> Callable[[], object]:
    """Open a connection to ``dbname`` left inside a transaction; return a call that uses it."""
    assert isinstance(server, PostgresServer)
    conn = psycopg.connect(server.conninfo(dbname))
    conn.execute("CREATE TABLE t (x int)")
    conn.execute("SELECT * FROM t FOR UPDATE")
    return lambda: conn.execute("SELECT 1")


def _mysql_databases(server: Server) -> set[str]:
    assert isinstance(server, MySQLServer)
    with contextlib.closing(server.connect()) as conn, conn.cursor() as cur:
        cur.execute("SHOW DATABASES")
        return {row[0] for row in cur.fetchall()}


def _mysql_linger(server: Server, dbname: str) -> Callable[[], object]:
    assert isinstance(server, MySQLServer)
    conn = server.connect(dbname)
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (x int)")
    conn.begin()
    cur.execute("SELECT * FROM t FOR UPDATE")  # a metadata lock DROP DATABASE would wait on
    return lambda: cur.execute("SELECT 1")


@dataclass(frozen=True)
class Case:
    provider: Provider[Any]
    fixture_prefix: str
    scheme: str
    default_user: str
    store: str
    databases: Callable[[Server], set[str]]
    linger: Callable[[Server, str], Callable[[], object]]
    gone: type[Exception]


CASES = [
    pytest.param(
        Case(POSTGRES, "postgres", "postgresql+psycopg", "postgres", "tickwork_postgres.store:PostgresStore",
             _pg_databases, _pg_linger, psycopg.OperationalError),
        id="postgres",
    ),
    pytest.param(
        Case(MYSQL, "mysql", "mysql", "root", "tickwork_mysql.store:MySQLStore",
             _mysql_databases, _mysql_linger, pymysql.err.OperationalError),
        id="mysql",
    ),
]  # fmt: skip


# -- the session's servers and their fresh databases ---------------------------------------------------


def test_postgres_url_is_a_fresh_empty_working_database(postgres_url: str) -> None:
    url = make_url(postgres_url)
    assert url.drivername == "postgresql+psycopg"
    assert url.database is not None and url.database.startswith(f"tickwork_test_{os.getpid()}_")
    with psycopg.connect(url.set(drivername="postgresql").render_as_string(hide_password=False)) as conn:
        assert conn.execute("SELECT current_database()").fetchone() == (url.database,)
        user_tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables"
            " WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
        ).fetchone()
        assert user_tables == (0,)
        conn.execute("CREATE TABLE probe (id serial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())")
        conn.execute("INSERT INTO probe DEFAULT VALUES")
        row = conn.execute("SELECT count(*), max(at) <= now() FROM probe").fetchone()
        assert row == (1, True)


def test_mysql_url_is_a_fresh_database_the_store_migrates_and_opens(mysql_url: str) -> None:
    assert make_url(mysql_url).database.startswith(f"tickwork_test_{os.getpid()}_")  # type: ignore[union-attr]
    store = MySQLStore(mysql_url)
    store.upgrade()
    store.open()
    try:
        assert store.list_schedules() == []
    finally:
        store.close()


@pytest.mark.parametrize("case", CASES)
def test_fresh_databases_are_distinct_and_dropped_despite_open_connections(
    case: Case, request: pytest.FixtureRequest
) -> None:
    server: Server = request.getfixturevalue(f"{case.fixture_prefix}_server")
    with case.provider.fresh_database(server) as first, case.provider.fresh_database(server) as second:
        assert first != second and {first, second} <= case.databases(server)
        use_lingering = case.linger(server, first)
    assert not {first, second} & case.databases(server)
    with pytest.raises(case.gone):
        use_lingering()


# -- which server: URLs, modes, programs ----------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_server_from_url_reads_every_part_and_keeps_the_password(case: Case) -> None:
    server = case.provider.server_from_url(f"{case.scheme}://alice:p%40ss@db.internal:6543/maint")
    assert (server.host, server.port, server.user, server.password, server.maintenance_dbname) == (
        "db.internal",
        6543,
        "alice",
        "p@ss",
        "maint",
    )
    assert server.url("t1") == f"{case.scheme}://alice:p%40ss@db.internal:6543/t1"
    assert "p@ss" not in server.describe()


@pytest.mark.parametrize("case", CASES)
def test_server_from_url_defaults_and_rejects_other_backends(case: Case) -> None:
    server = case.provider.server_from_url(f"{case.scheme}://h")
    assert (server.port, server.user, server.password, server.maintenance_dbname) == (
        case.provider.port,
        case.default_user,
        None,
        case.provider.maintenance_dbname,
    )
    with pytest.raises(ServerUnavailable, match="must be a"):
        case.provider.server_from_url("sqlite:///x.db")


@pytest.mark.parametrize("case", CASES)
def test_select_server_rejects_an_unknown_mode(case: Case) -> None:
    with pytest.raises(ServerUnavailable, match=f"{case.provider.env_mode}='bogus' is not one of"):
        case.provider.select_server({case.provider.env_mode: "bogus"})


@pytest.mark.parametrize("case", CASES)
def test_select_server_names_an_unreachable_url_without_its_password(case: Case) -> None:
    port = free_port()
    with pytest.raises(ServerUnavailable) as caught:
        case.provider.select_server({case.provider.env_url: f"{case.scheme}://someone:hunter2@127.0.0.1:{port}/x"})
    message = str(caught.value)
    assert case.provider.env_url in message and f"127.0.0.1:{port}" in message and "refused" in message
    assert "hunter2" not in message


@pytest.mark.parametrize("case", CASES)
def test_the_debian_programs_are_found_and_a_bindir_overrides_them(case: Case, tmp_path: Path) -> None:
    programs = case.provider.find_programs({})
    assert all(os.access(p, os.X_OK) for p in programs)
    with pytest.raises(ServerUnavailable) as caught:
        case.provider.find_programs({case.provider.env_bindir: str(tmp_path)})
    assert str(tmp_path) in str(caught.value) and case.provider.env_bindir in str(caught.value)


def test_only_directories_of_dead_sessions_with_stopped_servers_are_removed(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for name, owner in (("tickwork-x-dead", dead.pid), ("tickwork-x-live", os.getpid())):
        (tmp_path / name).mkdir()
        (tmp_path / name / OWNER_FILE).write_text(f"{owner}\n")
    assert remove_stale_dirs(tmp_path, "tickwork-x-") == [tmp_path / "tickwork-x-dead"]
    assert [p.name for p in tmp_path.iterdir()] == ["tickwork-x-live"]


# -- the throwaway server, in a session of its own -------------------------------------------------------


def _run_inner_pytest(
    tmp_path: Path, case: Case, test_source: str, env_updates: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run ``test_source`` in a separate pytest session with only ``case``'s server plugin loaded."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    test_file = tmp_path / "test_inner.py"
    test_file.write_text(textwrap.dedent(test_source))
    knobs = (case.provider.env_mode, case.provider.env_url, case.provider.env_bindir)
    env = {k: v for k, v in os.environ.items() if k not in knobs}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env.update(env_updates)
    plugin = f"tests.support.servers.{case.fixture_prefix}"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", plugin, "-p", "no:cacheprovider", "-q", "-rA", str(test_file)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=INNER_TIMEOUT_S,
        check=False,
    )


INNER_THROWAWAY_TEST = """
    import json, os
    from pathlib import Path

    import psutil
    from {module} import {store_class} as Store

    def use(url):
        store = Store(url)
        store.upgrade()
        store.open()
        try:
            return store.now().tzinfo is not None and store.list_schedules() == []
        finally:
            store.close()

    def test_throwaway({prefix}_server, {prefix}_url):
        server = {prefix}_server
        throwaway = server.throwaway
        assert server.source == "throwaway" and throwaway is not None
        facts = {{
            "port": server.port,
            "uid": psutil.Process(throwaway.pid).uids().real,
            "base_dir": str(throwaway.data_dir.parent),
            "data_dir_existed": throwaway.data_dir.is_dir(),
            "served": use({prefix}_url),
        }}
        first_pid = throwaway.pid
        throwaway.restart()
        facts["restarted"] = throwaway.pid != first_pid and use({prefix}_url)
        Path(os.environ["SERVERS_REPORT"]).write_text(json.dumps(facts))
"""


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if text in " ".join(proc.info["cmdline"] or []):
            found.append(proc.pid)
    return found


@pytest.mark.parametrize("case", CASES)
def test_a_throwaway_server_starts_serves_restarts_and_leaves_nothing_behind(case: Case, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    module, store_class = case.store.split(":")
    source = INNER_THROWAWAY_TEST.format(module=module, store_class=store_class, prefix=case.fixture_prefix)
    result = _run_inner_pytest(
        tmp_path, case, source, {case.provider.env_mode: "throwaway", "SERVERS_REPORT": str(report)}
    )
    assert result.returncode == 0, result.stdout + result.stderr
    facts = json.loads(report.read_text())
    assert facts["served"] is True and facts["restarted"] is True and facts["data_dir_existed"] is True
    if os.geteuid() == 0:
        assert facts["uid"] != 0, "the server ran as root"
    assert not Path(facts["base_dir"]).exists(), "throwaway directory left behind"
    assert _processes_mentioning(facts["base_dir"]) == [], "server processes left behind"
    assert case.provider.probe(case.provider.make_server(facts["port"])) is not None, "still answering"


@pytest.mark.parametrize("case", CASES)
def test_the_fixture_fails_loudly_instead_of_skipping_when_no_server_can_be_had(case: Case, tmp_path: Path) -> None:
    missing = tmp_path / "no-server-here"
    source = f"""
        def test_needs_a_server({case.fixture_prefix}_url):
            pass
    """
    env = {case.provider.env_mode: "throwaway", case.provider.env_bindir: str(missing)}
    result = _run_inner_pytest(tmp_path, case, source, env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 error" in result.stdout and "skipped" not in result.stdout
    assert f"{case.provider.label} tests need a server" in result.stdout and str(missing) in result.stdout


# -- config_for ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_config_for_gives_a_fresh_migrated_store_as_a_dict_and_as_toml(backend: str, config_for: ConfigFor) -> None:
    config = config_for(backend, migrated=True)
    assert config.store["plugin"] == backend
    assert tomllib.loads(config.toml()) == {"store": config.store}
    with tickwork.connect(config.as_dict(scheduler={"node_id": "n1"})) as admin:
        assert admin.config.scheduler.node_id == "n1"
        admin.add("nightly", "0 3 * * *", "tests.support.jobs_for_tests:record")
        assert [info.name for info in admin.list()] == ["nightly"]
    other = config_for(backend)
    assert other.store != config.store
    with pytest.raises(ValueError, match="no backend 'oracle'"):
        config_for("oracle")
