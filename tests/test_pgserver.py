"""Tests of the PostgreSQL test-server plumbing in tests/pgserver.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.pgserver import (
    ENV_BINDIR,
    ENV_MODE,
    ENV_URL,
    PostgresServer,
    PostgresUnavailable,
    free_port,
    fresh_database,
    select_server,
    server_from_url,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
INNER_TIMEOUT_S = 120


def _libpq_url(sqlalchemy_url: str) -> str:
    return make_url(sqlalchemy_url).set(drivername="postgresql").render_as_string(hide_password=False)


def _database_exists(server: PostgresServer, dbname: str) -> bool:
    with psycopg.connect(server.conninfo(server.maintenance_dbname)) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone() is not None


def test_postgres_url_is_a_fresh_empty_working_database(postgres_url: str) -> None:
    url = make_url(postgres_url)
    assert url.drivername == "postgresql+psycopg"
    assert url.database is not None and url.database.startswith(f"tickwork_test_{os.getpid()}_")
    with psycopg.connect(_libpq_url(postgres_url)) as conn:
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


def test_fresh_databases_are_distinct_and_dropped_despite_open_connections(postgres_server: PostgresServer) -> None:
    with fresh_database(postgres_server) as first, fresh_database(postgres_server) as second:
        assert first != second
        lingering = psycopg.connect(postgres_server.conninfo(first))
        lingering.execute("CREATE TABLE t (x int)")
        lingering.commit()
        assert _database_exists(postgres_server, first)
    try:
        assert not _database_exists(postgres_server, first)
        assert not _database_exists(postgres_server, second)
        with pytest.raises(psycopg.OperationalError):
            lingering.execute("SELECT 1")
    finally:
        lingering.close()


def test_server_from_url_reads_every_part_and_keeps_the_password() -> None:
    server = server_from_url("postgresql+psycopg://alice:p%40ss@db.internal:6543/maint")
    assert (server.host, server.port, server.user, server.password, server.maintenance_dbname) == (
        "db.internal",
        6543,
        "alice",
        "p@ss",
        "maint",
    )
    assert server.url("t1") == "postgresql+psycopg://alice:p%40ss@db.internal:6543/t1"
    assert "p@ss" not in server.describe()


def test_server_from_url_defaults_and_rejects_other_backends() -> None:
    server = server_from_url("postgresql://h")
    assert (server.port, server.user, server.password, server.maintenance_dbname) == (
        5432,
        "postgres",
        None,
        "postgres",
    )
    with pytest.raises(PostgresUnavailable, match="must be a postgresql"):
        server_from_url("sqlite:///x.db")


def test_select_server_rejects_an_unknown_mode() -> None:
    with pytest.raises(PostgresUnavailable, match="TICKWORK_TEST_PG='bogus'"):
        select_server({ENV_MODE: "bogus"})


def test_select_server_names_an_unreachable_url_without_its_password() -> None:
    port = free_port()
    with pytest.raises(PostgresUnavailable) as caught:
        select_server({ENV_URL: f"postgresql://postgres:hunter2@127.0.0.1:{port}/postgres"})
    message = str(caught.value)
    assert ENV_URL in message and f"127.0.0.1:{port}" in message
    assert "hunter2" not in message


def _run_inner_pytest(
    tmp_path: Path, test_source: str, env_updates: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run ``test_source`` in a separate pytest session with only this plugin loaded."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    test_file = tmp_path / "test_inner.py"
    test_file.write_text(textwrap.dedent(test_source))
    env = {k: v for k, v in os.environ.items() if k not in (ENV_URL, ENV_MODE, ENV_BINDIR)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env.update(env_updates)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.pgserver", "-p", "no:cacheprovider", "-q", "-rA", str(test_file)],
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

    import psycopg
    from sqlalchemy.engine import make_url

    def test_throwaway(postgres_server, postgres_url):
        throwaway = postgres_server.throwaway
        assert postgres_server.source == "throwaway" and throwaway is not None
        status = Path(f"/proc/{throwaway.pid}/status").read_text()
        uid = int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])
        libpq = make_url(postgres_url).set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(libpq) as conn:
            conn.execute("CREATE TABLE t (x int)")
            conn.execute("INSERT INTO t VALUES (42)")
            value = conn.execute("SELECT x FROM t").fetchone()[0]
            server_now = conn.execute("SELECT now() IS NOT NULL").fetchone()[0]
        Path(os.environ["PGSERVER_REPORT"]).write_text(json.dumps({
            "port": postgres_server.port,
            "pid": throwaway.pid,
            "uid": uid,
            "base_dir": str(throwaway.data_dir.parent),
            "data_dir_existed": throwaway.data_dir.is_dir(),
            "startup_seconds": throwaway.startup_seconds,
            "value": value,
            "server_now": server_now,
        }))
"""


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(proc.name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find leftover processes")
def test_throwaway_server_starts_serves_and_leaves_nothing_behind(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = _run_inner_pytest(tmp_path, INNER_THROWAWAY_TEST, {ENV_MODE: "throwaway", "PGSERVER_REPORT": str(report)})
    assert result.returncode == 0, result.stdout + result.stderr
    facts = json.loads(report.read_text())
    print(f"throwaway server startup: {facts['startup_seconds']:.2f}s")
    assert facts["value"] == 42 and facts["server_now"] is True and facts["data_dir_existed"] is True
    if os.geteuid() == 0:
        assert facts["uid"] != 0, "postgres ran as root"
    assert not Path(facts["base_dir"]).exists(), "throwaway directory left behind"
    assert _processes_mentioning(facts["base_dir"]) == [], "postgres processes left behind"
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(host="127.0.0.1", port=facts["port"], user="postgres", dbname="postgres", connect_timeout=2)


def test_fixture_fails_loudly_instead_of_skipping_when_no_server_can_be_had(tmp_path: Path) -> None:
    missing = tmp_path / "no-postgres-here"
    result = _run_inner_pytest(
        tmp_path,
        """
        def test_needs_postgres(postgres_url):
            pass
        """,
        {ENV_MODE: "throwaway", ENV_BINDIR: str(missing)},
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 error" in result.stdout and "skipped" not in result.stdout
    assert "PostgreSQL tests need a server" in result.stdout and str(missing) in result.stdout
