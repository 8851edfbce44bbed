"""A password in a database URL never reaches the output of the node or the worker command line.

Real processes, as an operator runs them: the URL comes from the config (``${PW}`` expanded) or
the environment, and each mistake below used to print the expanded password.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pymysql
import pytest
from sqlalchemy import make_url

from tests.support import planted
from tests.support.forkedcli import run_module, run_tickwork
from tests.support.servers.mysql import MySQLServer
from tickwork.config import parse
from tickwork.plugin.assembly import build_store
from tickwork.plugin.manager import default_manager
from tickwork.sql.dburl import masked
from tickwork_jobqueue.database import describe, parse_url
from tickwork_jobqueue.executor import JobQueueExecutor

TIMEOUT_S = 60  # guards against a hung process; not a timing assertion

# A one-character typo, a port that is not a number, an unencoded '@', a host that refuses.
BROKEN_URLS = {
    "typo": ("postgresql:/app:${PW}@db/app", 2, "'postgresql:' must be followed by '//'"),
    "port": ("postgresql://app:${PW}@db:54x2/app", 2, "the port of the database URL is not a number"),
    "at-sign": ("postgresql://app:${PW}@x@db/app", 2, "holds an '@'; write it as %40"),
    "refused": ("postgresql://app:${PW}@127.0.0.1:9/app", 1, "127.0.0.1"),
    # libpq's other ways to give a password: in the query string.
    "refused-query": ("postgresql://app@127.0.0.1:9/app?sslpassword=${PW}&password=${PW}", 1, "password=***"),
}


def _env() -> dict[str, str]:
    env = {**os.environ, "PW": planted.PASSWORD}
    env.pop("TICKWORK_CONFIG", None)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.parametrize("case", sorted(BROKEN_URLS))
def test_node_store_url_errors_do_not_echo_the_password(tmp_path: Path, case: str) -> None:
    url, code, message = BROKEN_URLS[case]
    config = tmp_path / "tickwork.toml"
    config.write_text(f'[store]\nplugin = "postgres"\nurl = "{url}"\n', encoding="utf-8")

    result = run_tickwork(["run", "--config", str(config), "--for", "1"], cwd=tmp_path, env=_env())

    assert result.returncode == code, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert planted.PASSWORD not in result.stdout + result.stderr


@pytest.mark.parametrize("case", ["typo", "port", "at-sign"])
def test_node_jobqueue_url_errors_do_not_echo_the_password(tmp_path: Path, case: str) -> None:
    url, _, message = BROKEN_URLS[case]
    config = tmp_path / "tickwork.toml"
    config.write_text(
        textwrap.dedent(
            f"""\
            [store]
            path = "{tmp_path / "tickwork.db"}"
            [executor.jobqueue]
            url = "{url}"
            """
        ),
        encoding="utf-8",
    )

    result = run_tickwork(["run", "--config", str(config), "--for", "1"], cwd=tmp_path, env=_env())

    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("tickwork: error: ") and message in result.stderr
    assert planted.PASSWORD not in result.stdout + result.stderr


@pytest.mark.parametrize("case", sorted(BROKEN_URLS))
@pytest.mark.parametrize("given", ["--url", "environment"])
def test_worker_url_errors_do_not_echo_the_password(tmp_path: Path, case: str, given: str) -> None:
    url, code, message = BROKEN_URLS[case]
    url = url.replace("${PW}", planted.PASSWORD)
    env = _env()
    args = ["--once"]
    if given == "--url":
        args += ["--url", url]
    else:
        env["TICKWORK_JOBQUEUE_URL"] = url

    result = run_module("tickwork_jobqueue.worker", args, cwd=tmp_path, env=env, timeout=TIMEOUT_S)

    assert result.returncode == code, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert planted.PASSWORD not in result.stdout + result.stderr


# -- passwords in the query of a URL (libpq's ?password=, ?sslpassword=) ------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://app:SEKRIT0@db/app", "postgresql://app:***@db/app"),
        (
            "postgresql://app@db/app?password=SEKRIT1&sslpassword=SEKRIT2&sslmode=require",
            "postgresql://app@db/app?password=***&sslmode=require&sslpassword=***",
        ),
        (
            "mysql+pymysql://app:SEKRIT0@db/app?PassWord=SEKRIT1&charset=utf8mb4",
            "mysql+pymysql://app:***@db/app?PassWord=***&charset=utf8mb4",
        ),
        (
            "postgresql://db/app?client_secret=SEKRIT1&auth_token=SEKRIT2&passfile=SEKRIT3&sslkey=SEKRIT4&pwd=SEKRIT5",
            "postgresql://db/app?auth_token=***&client_secret=***&passfile=***&pwd=***&sslkey=***",
        ),
        ("postgresql://db/app?password=SEKRIT1&password=SEKRIT2", "postgresql://db/app?password=***&password=***"),
        ("sqlite:////var/lib/tickwork.db", "sqlite:////var/lib/tickwork.db"),
    ],
)
def test_one_function_masks_user_info_and_query_passwords(url: str, shown: str) -> None:
    assert masked(url) == shown
    assert masked(make_url(url)) == shown


def test_an_unparseable_url_is_masked_down_to_its_scheme() -> None:
    assert masked("postgresql://app:SEKRIT@x@db:5x/app?password=SEKRIT") == "postgresql://..."
    assert masked("SEKRIT") == "(a database URL that cannot be parsed)"


@pytest.mark.parametrize("plugin", ["postgres", "mysql"])
def test_server_stores_describe_their_url_without_query_passwords(plugin: str) -> None:
    scheme = "postgresql" if plugin == "postgres" else "mysql"
    url = f"{scheme}://app:SEKRIT0@db/app?password=SEKRIT1&sslpassword=SEKRIT2"
    store = build_store(parse({"store": {"plugin": plugin, "url": url}}), default_manager())

    assert "SEKRIT" not in store.describe()
    assert "password=***" in store.describe()


def test_the_jobqueue_describes_its_url_without_query_passwords() -> None:
    url = "postgresql://app:SEKRIT0@db/app?password=SEKRIT1&sslpassword=SEKRIT2"

    assert describe(parse_url(url)) == "postgresql+psycopg://app:***@db/app?password=***&sslpassword=***"
    assert "SEKRIT" not in repr(JobQueueExecutor(url))


# -- every command and page of a deployment whose URLs carry ?password= -------------------------------

SECRET_QUERY = "password=SEKRIT1&sslpassword=SEKRIT2"

# MySQL's "running with the --skip-grant-tables option" (a throwaway test server).
SKIP_GRANT_TABLES = 1290

DEPLOYMENT_JOBS = """
import tickwork


@tickwork.cron("* * * * * *", name="tick")
def tick() -> None:
    pass
"""


def _with_query(url: str, query: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{query}"


def _get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return f"{response.status} {response.read().decode()}"
    except urllib.error.HTTPError as exc:
        return f"{exc.code} {exc.read().decode()}"


def _wait_for(url: str, process: subprocess.Popen[str]) -> None:
    """Until ``url`` answers 200 (or the process died: then its output says why)."""
    for _ in range(TIMEOUT_S * 10):  # a bound against a hang, not a timing assertion
        assert process.poll() is None, f"exited with {process.returncode}"
        with contextlib.suppress(OSError):
            if _get(url).startswith("200 "):
                return
        time.sleep(0.1)
    raise AssertionError(f"{url} never answered 200")


def _mysql_user(request: pytest.FixtureRequest, url: str, password: str) -> str:
    """``url`` as a user of its database whose password is ``password`` (dropped after the test).

    A throwaway server runs without grant tables: it takes any password, so root is kept.
    """
    server: MySQLServer = request.getfixturevalue("mysql_server")
    parsed = make_url(url)
    user = f"leak_{uuid.uuid4().hex[:8]}"
    with contextlib.closing(server.connect()) as conn, conn.cursor() as cur:
        try:
            cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'")
        except pymysql.err.MySQLError as exc:
            if exc.args[0] != SKIP_GRANT_TABLES:
                raise
            return url
        cur.execute(f"GRANT ALL ON `{parsed.database}`.* TO '{user}'@'%'")

    def drop() -> None:
        with contextlib.closing(server.connect()) as conn, conn.cursor() as cur:
            cur.execute(f"DROP USER '{user}'@'%'")

    request.addfinalizer(drop)
    return parsed.set(username=user, password=None).render_as_string(hide_password=False)


@pytest.mark.slow
@pytest.mark.parametrize("plugin", ["postgres", "mysql"])
def test_query_passwords_show_up_in_no_command_log_or_page(
    plugin: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    server_url: str = request.getfixturevalue(f"{plugin}_url")
    if plugin == "postgres":  # and a password in the user info, which the test server never checks
        server_url = planted.with_password(server_url)
        store_url = _with_query(server_url, SECRET_QUERY)
    else:  # PyMySQL knows no sslpassword (it would refuse to connect): MySQL gets the one it reads
        store_url = _with_query(_mysql_user(request, server_url, "SEKRIT1"), "password=SEKRIT1")
    queue = ""
    if plugin == "postgres":
        queue = f'[executor.jobqueue]\nurl = "{_with_query(server_url, SECRET_QUERY)}"\n'
    metrics_port, web_port = _free_port(), _free_port()
    (tmp_path / "deployment_jobs.py").write_text(DEPLOYMENT_JOBS, encoding="utf-8")
    (tmp_path / "tickwork.toml").write_text(
        f'[scheduler]\njobs = ["deployment_jobs"]\nnode_id = "leak-node"\n\n'
        f'[store]\nplugin = "{plugin}"\nurl = "{store_url}"\n\n'
        f"[executor.local]\n\n{queue}\n[metrics]\nport = {metrics_port}\n",
        encoding="utf-8",
    )
    env = {**_env(), "PYTHONPATH": str(tmp_path), "TICKWORK_WEB_TOKEN": "leak-test-token"}
    tickwork = [sys.executable, "-m", "tickwork.cli"]
    seen: dict[str, str] = {}

    def command(*args: str) -> None:
        done = run_tickwork(args, cwd=tmp_path, env=env, timeout=TIMEOUT_S)
        seen[" ".join(args)] = done.stdout + done.stderr
        assert done.returncode == 0, done.stdout + done.stderr

    command("db", "upgrade")
    command("db", "current")
    command("db", "current", "--json")
    with (tmp_path / "node.log").open("w+", encoding="utf-8") as log:
        node = subprocess.Popen(
            [*tickwork, "run", "--for", "60"], cwd=tmp_path, env=env, stdout=log, stderr=log, text=True
        )
        try:
            _wait_for(f"http://127.0.0.1:{metrics_port}/healthz", node)
            seen["/metrics"] = _get(f"http://127.0.0.1:{metrics_port}/metrics")
            seen["/healthz"] = _get(f"http://127.0.0.1:{metrics_port}/healthz")
        finally:
            node.terminate()
            node.wait(TIMEOUT_S)
        log.seek(0)
        seen["run"] = log.read()
    command("nodes")
    command("jobs", "list")
    command("history")
    with (tmp_path / "web.log").open("w+", encoding="utf-8") as log:
        web = subprocess.Popen(
            [*tickwork, "web", "--port", str(web_port)], cwd=tmp_path, env=env, stdout=log, stderr=log, text=True
        )
        base = f"http://127.0.0.1:{web_port}"
        try:
            _wait_for(f"{base}/api/nodes", web)
            for page in ("/", "/runs", "/nodes", "/schedules/tick", "/api/schedules", "/api/runs", "/api/nodes"):
                seen[page] = _get(base + page)
        finally:
            web.terminate()
            web.wait(TIMEOUT_S)
        log.seek(0)
        seen["web"] = log.read()

    # The banner names the store, with its passwords masked.
    assert "password=***" in seen["run"], seen["run"]
    assert "password=***" in seen["db current"] and "password=***" in seen["db upgrade"]
    assert "tickwork_runs_total" in seen["/metrics"]
    assert seen["/schedules/tick"].startswith("200 ")
    assert {where: text for where, text in seen.items() if "SEKRIT" in text or planted.PASSWORD in text} == {}
