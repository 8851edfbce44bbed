"""The CLI as a newcomer meets it (issue #17): global options anywhere, --version, python -m,
listings on a terminal / a pipe / --json, the verbs users look for, and one-line errors for
declaration and configuration mistakes. Real processes where the terminal or pipe matters."""

from __future__ import annotations

import json
import os
import pty
import sqlite3
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine

import tickwork
from tests.support.paths import REPO
from tests.support.servers.configs import ConfigFor
from tickwork.cli import main
from tickwork.config import load
from tickwork.node import Node
from tickwork.scheduling.localtime import local_time
from tickwork.sql import migrations
from tickwork_sqlite.store import SQLiteStore

#: The newest migration's revision.
HEAD = migrations.head_revision()

TICKWORK = [sys.executable, "-m", "tickwork"]
RECORD = "tests.support.jobs_for_tests:record"
BOOM = "tests.support.jobs_for_tests:boom"


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TICKWORK_CONFIG", raising=False)
    monkeypatch.delenv("TICKWORK_LOG_LEVEL", raising=False)
    return tmp_path


def tw(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return Result(code, out, err)


def proc(*args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None) -> Result:
    environment = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    environment.pop("TICKWORK_CONFIG", None)
    done = subprocess.run(
        [*TICKWORK, *args], cwd=cwd, env=environment, capture_output=True, text=True, input=stdin, timeout=120
    )
    return Result(done.returncode, done.stdout, done.stderr)


def one_error(result: Result, code: int) -> str:
    """The single ``tickwork: error:`` line of a failed command."""
    assert result.code == code, result
    assert result.out == ""
    assert "Traceback" not in result.err, result.err
    lines = result.err.splitlines()
    errors = [line for line in lines if line.startswith("tickwork: error: ")]
    assert len(errors) == 1, result.err
    return errors[0]


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def admin(workdir: Path) -> Iterator[tickwork.Admin]:
    with tickwork.connect() as a:
        yield a


# -- global options, version, python -m ----------------------------------------------------------


def test_global_options_before_or_after_the_command(capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    write(workdir / "x.toml", '[store]\npath = "x.db"\n')
    assert tw(capsys, "-c", "x.toml", "db", "upgrade").code == 0
    assert (workdir / "x.db").is_file() and not (workdir / "tickwork.db").exists()
    assert tw(capsys, "-c", "x.toml", "jobs", "add", "a", "* * * * *", RECORD).code == 0
    before = tw(capsys, "-c", "x.toml", "--json", "jobs", "list")
    after = tw(capsys, "jobs", "list", "--json", "--config", "x.toml")
    mixed = tw(capsys, "--json", "jobs", "list", "-c", "x.toml")
    assert before == after == mixed
    assert json.loads(before.out)["name"] == "a"
    assert tw(capsys, "--log-level", "debug", "-c", "x.toml", "nodes").code == 0
    # After the command, a global option overrides the one before it.
    write(workdir / "y.toml", '[store]\npath = "y.db"\n')
    err = one_error(tw(capsys, "-c", "x.toml", "jobs", "list", "-c", "y.toml"), 1)
    assert "SQLite database 'y.db' does not exist (the store of y.toml)" in err


def test_version_and_python_dash_m(workdir: Path) -> None:
    version = proc("--version", cwd=workdir)
    assert (version.code, version.out) == (0, f"tickwork {tickwork.__version__}\n")
    helped = proc("--help", cwd=workdir)
    assert helped.code == 0
    assert helped.out.startswith("usage: tickwork ")
    for text in ("TICKWORK_CONFIG", "TICKWORK_LOG_LEVEL", "exit status:", "0  success", "1  a state", "2  invalid"):
        assert text in helped.out
    for command in ("run", "next", "jobs", "history", "nodes", "db"):
        assert f"    {command}" in helped.out
    jobs_help = proc("jobs", "--help", cwd=workdir).out
    for action in ("list", "show", "add", "update", "remove", "enable", "disable", "trigger"):
        assert f"    {action}" in jobs_help


def test_log_level_from_the_environment(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TICKWORK_LOG_LEVEL", "loud")
    err = one_error(tw(capsys, "next", "* * * * *"), 2)
    assert err == "tickwork: error: $TICKWORK_LOG_LEVEL: 'LOUD' is not one of DEBUG, INFO, WARNING, ERROR"


# -- listings: terminal, pipe, JSON, empty -------------------------------------------------------


def run_in_terminal(args: list[str], cwd: Path) -> str:
    """Run ``python -m tickwork ARGS`` with stdout on a pseudo-terminal; return what it printed."""
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    env.pop("TICKWORK_CONFIG", None)
    child = subprocess.Popen([*TICKWORK, *args], cwd=cwd, env=env, stdout=follower, stderr=subprocess.PIPE)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert child.wait(timeout=60) == 0
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_a_terminal_gets_a_header_and_aligned_columns_a_pipe_gets_tsv(admin: tickwork.Admin, workdir: Path) -> None:
    admin.add("short", "*/5 * * * *", RECORD)
    admin.add("a-much-longer-name", "0 3 * * *", RECORD, tz="Europe/Oslo", enabled=False)
    shown = run_in_terminal(["jobs", "list"], workdir).splitlines()
    assert shown[0].split() == [
        "NAME",
        "KIND",
        "EXPRESSION",
        "TZ",
        "NEXT",
        "FIRE",
        "STATE",
        "HEALTH",
        "LAST",
        "RUN",
        "EXECUTOR",
        "TARGET",
    ]
    assert len(shown) == 3
    # Aligned: every column starts at the same offset on each line.
    for column in ("KIND", "EXPRESSION", "TZ", "STATE", "EXECUTOR", "TARGET"):
        offset = shown[0].index(column)
        assert all(line[offset - 2 : offset] == "  " and line[offset] != " " for line in shown[1:]), column
    assert shown[1].startswith("short ") and shown[2].startswith("a-much-longer-name  cron")
    assert "disabled" in shown[2]

    piped = proc("jobs", "list", cwd=workdir)
    assert piped.code == 0
    assert [line.split("\t")[:2] for line in piped.lines] == [["short", "cron"], ["a-much-longer-name", "cron"]]


def test_a_closed_pipe_is_not_an_error(admin: tickwork.Admin, workdir: Path) -> None:
    # More rows than a pipe buffer holds, so the writer meets the closed pipe.
    admin.add_many(
        {"name": f"job-{i:05d}-{'x' * 60}", "expression": "0 3 * * *", "target": RECORD} for i in range(1500)
    )
    shell = f"{' '.join(TICKWORK)} jobs list | head -1"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", shell], cwd=workdir, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.startswith("job-00000-")
    assert len(done.stdout.splitlines()) == 1
    assert done.stderr == ""
    assert done.returncode == 0


def test_empty_results_are_said_on_stderr(capsys: pytest.CaptureFixture[str], admin: tickwork.Admin) -> None:
    assert tw(capsys, "db", "upgrade").code == 0
    assert tw(capsys, "jobs", "list") == Result(0, "", "tickwork: no schedules\n")
    assert tw(capsys, "jobs", "list", "--search", "zzz") == Result(0, "", "tickwork: no schedules match\n")
    assert tw(capsys, "history") == Result(0, "", "tickwork: no runs match\n")
    assert tw(capsys, "nodes", "--json") == Result(
        0, "", "tickwork: no nodes (none is running, or none has started on this store yet)\n"
    )
    admin.add("a", "* * * * *", RECORD)
    err = one_error(tw(capsys, "history", "--schedule", "nope"), 1)
    assert err == "tickwork: error: no schedule named 'nope'"


def test_reads_never_create_a_store(capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    for args in (["jobs", "list"], ["jobs", "show", "x"], ["history"], ["nodes"], ["db", "current"]):
        err = one_error(tw(capsys, *args), 1)
        assert err == (
            "tickwork: error: SQLite database 'tickwork.db' does not exist: no config file was given or found "
            "($TICKWORK_CONFIG, ./tickwork.toml), so the default store was used; pass the config file your "
            "node uses (-c FILE)"
        )
    sql = tw(capsys, "db", "upgrade", "--sql")
    assert sql.code == 0 and "CREATE TABLE tickwork_schedules" in sql.out
    write(workdir / "examples.toml", '[store]\npath = "demo.db"\n')
    err = one_error(tw(capsys, "history", "-c", "examples.toml"), 1)
    assert err == (
        "tickwork: error: SQLite database 'demo.db' does not exist (the store of examples.toml); start a node "
        "with that config or run `tickwork db upgrade` to create it"
    )
    assert sorted(os.listdir(workdir)) == ["examples.toml"]


def test_nodes_json_and_next_json(capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    write(workdir / "tickwork.toml", '[scheduler]\nnode_id = "usability-node"\n')
    node = Node(load())
    node.start()
    try:
        result = tw(capsys, "nodes", "--json")
    finally:
        node.shutdown()
    [row] = [json.loads(line) for line in result.lines]
    assert set(row) == {"id", "started_at", "heartbeat_at", "heartbeat_age", "live", "executors"}
    assert (row["id"], row["live"], row["executors"]) == ("usability-node", True, ["local"])
    nxt = tw(capsys, "next", "*/15 * * * *", "--after", "2024-01-01T00:07:00Z", "-n", "2", "--json")
    assert [json.loads(line) for line in nxt.lines] == [
        {"fire_time": "2024-01-01T00:15:00Z"},
        {"fire_time": "2024-01-01T00:30:00Z"},
    ]


# -- jobs show / update / add --replace ----------------------------------------------------------


def test_jobs_show(capsys: pytest.CaptureFixture[str], admin: tickwork.Admin) -> None:
    admin.add("report", "0 9 * * *", RECORD, tz="Europe/Paris", retries=2, timeout=30)
    shown = tw(capsys, "jobs", "show", "report")
    fields = dict(line.split(":", 1) for line in shown.lines)
    assert fields["trigger"].strip() == "cron '0 9 * * *' in Europe/Paris"
    assert fields["retries"].strip() == "2 (backoff 10s, doubled)"
    assert fields["timeout"].strip() == "30s"
    assert fields["last run"].strip() == "-"
    as_json = json.loads(tw(capsys, "jobs", "show", "report", "--json").out)
    assert (as_json["name"], as_json["retries"], as_json["timezone"]) == ("report", 2, "Europe/Paris")
    assert one_error(tw(capsys, "jobs", "show", "nope"), 1) == "tickwork: error: no schedule named 'nope'"


def test_jobs_update_changes_only_what_is_given(capsys: pytest.CaptureFixture[str], admin: tickwork.Admin) -> None:
    admin.add("job", "0 0 1 1 *", RECORD, retries=3)
    result = tw(capsys, "jobs", "update", "job", "--expression", "*/10 * * * *", "--timeout", "7")
    assert result.code == 0, result
    info = admin.get("job")
    assert (info.expression, info.timeout, info.retries) == ("*/10 * * * *", 7.0, 3)
    assert result.out == f"updated job; next fire {local_time(info.next_fire, 'UTC')}\n"
    assert tw(capsys, "jobs", "update", "job", "--disable").code == 0
    assert not admin.get("job").enabled
    err = one_error(tw(capsys, "jobs", "update", "job"), 2)
    assert (
        err == "tickwork: error: jobs update: nothing to change; give at least one option (tickwork jobs update --help)"
    )
    assert "minute field: 61" in one_error(tw(capsys, "jobs", "update", "job", "--expression", "61 * * * *"), 2)
    assert one_error(tw(capsys, "jobs", "update", "ghost", "--timeout", "3"), 1) == (
        "tickwork: error: no schedule named 'ghost'"
    )


def test_jobs_add_replace(capsys: pytest.CaptureFixture[str], admin: tickwork.Admin) -> None:
    admin.add("job", "0 0 1 1 *", RECORD)
    assert "already exists" in one_error(tw(capsys, "jobs", "add", "job", "*/5 * * * *", RECORD), 1)
    assert tw(capsys, "jobs", "add", "job", "*/5 * * * *", RECORD, "--replace").code == 0
    assert admin.get("job").expression == "*/5 * * * *"
    assert tw(capsys, "jobs", "add", "new", "*/5 * * * *", RECORD, "--replace").code == 0


def test_misfire_choices_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["jobs", "add", "x", "* * * * *", RECORD, "--misfire", "never"])
    assert info.value.code == 2
    assert "invalid choice: 'never' (choose from skip, once, all)" in capsys.readouterr().err.replace(
        "'skip', 'once', 'all'", "skip, once, all"
    )


# -- history filters -----------------------------------------------------------------------------


def test_history_filters_by_status_time_and_node(
    capsys: pytest.CaptureFixture[str], admin: tickwork.Admin, workdir: Path
) -> None:
    write(workdir / "tickwork.toml", '[scheduler]\nnode_id = "hist-node"\n')
    admin.add("good", "0 0 1 1 *", RECORD)
    admin.add("bad", "0 0 1 1 *", BOOM)
    admin.trigger("good")
    admin.trigger("bad")
    node = Node(load())
    node.open()  # stepped by hand below: no loop thread
    try:
        node.engine.tick()
    finally:
        node.shutdown()
    everything = [json.loads(line) for line in tw(capsys, "history", "--json").lines]
    assert {r["schedule"] for r in everything} == {"good", "bad"}
    [failed] = [json.loads(line) for line in tw(capsys, "history", "--status", "failed", "--json").lines]
    assert (failed["schedule"], failed["attempt"]) == ("bad", 1)
    both = tw(capsys, "history", "--status", "failed,succeeded", "--json").lines
    assert len(both) == 2
    assert len(tw(capsys, "history", "--status", "failed", "--status", "succeeded", "--json").lines) == 2
    assert tw(capsys, "history", "--since", "1h", "--json").lines == tw(capsys, "history", "--json").lines
    assert tw(capsys, "history", "--until", "1h").err == "tickwork: no runs match\n"
    assert tw(capsys, "history", "--until", "2000-01-01T00:00:00Z").out == ""
    assert len(tw(capsys, "history", "--node", "hist-node").lines) == 2
    assert tw(capsys, "history", "--node", "elsewhere").out == ""
    # The text form shows the run id first, then the attempt (fourth column).
    [line] = tw(capsys, "history", "--status", "failed").lines
    assert line.split("\t")[2:5] == ["bad", "1", "failed"]
    assert line.split("\t")[0].isdigit()
    with pytest.raises(SystemExit):
        main(["history", "--status", "exploded"])
    assert "invalid status 'exploded' (choose from running, succeeded" in capsys.readouterr().err


# -- db ------------------------------------------------------------------------------------------


def test_db_current_and_upgrade_sql(capsys: pytest.CaptureFixture[str], config_for: ConfigFor, workdir: Path) -> None:
    write(workdir / "pg.toml", config_for("postgres").toml())
    head = migrations.head_revision()
    current = tw(capsys, "db", "current", "-c", "pg.toml")
    assert current.code == 1
    assert current.out.endswith(f"has no tickwork schema yet; `tickwork db upgrade` creates revision {head}\n")
    sql = tw(capsys, "db", "upgrade", "--sql", "-c", "pg.toml")
    assert sql.code == 0
    assert "CREATE TABLE tickwork_schedules" in sql.out and "CREATE TABLE tickwork_runs" in sql.out
    assert "INSERT INTO tickwork_alembic_version (version_num) VALUES ('0001')" in sql.out
    # --sql changed nothing.
    assert tw(capsys, "db", "current", "-c", "pg.toml").code == 1
    upgraded = tw(capsys, "db", "upgrade", "-c", "pg.toml")
    assert upgraded.out.startswith("created the tickwork schema in PostgreSQL database ")
    assert upgraded.out.endswith(f"(revision {head})\n")
    now = tw(capsys, "db", "current", "-c", "pg.toml", "--json")
    assert (now.code, json.loads(now.out)["current"], json.loads(now.out)["latest"]) == (0, head, True)
    assert tw(capsys, "db", "upgrade", "--sql", "-c", "pg.toml").out == ""


def test_db_upgrade_says_it_migrated(capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    store = SQLiteStore("tickwork.db")
    store.open(check_schema=False)  # creates the schema at head
    store.close()
    engine = create_engine("sqlite:///tickwork.db")
    with engine.begin() as conn:
        migrations.downgrade(conn, "0001")
    engine.dispose()
    with sqlite3.connect("tickwork.db") as conn:
        assert conn.execute("SELECT version_num FROM tickwork_alembic_version").fetchone() == ("0001",)
    current = tw(capsys, "db", "current")
    assert current == Result(
        1,
        f"SQLite database 'tickwork.db' is at revision 0001; this tickwork needs {HEAD}: run `tickwork db upgrade` "
        "(or `tickwork db upgrade --sql` for the SQL)\n",
        "",
    )
    assert "ALTER TABLE tickwork_schedules ADD COLUMN" in tw(capsys, "db", "upgrade", "--sql").out
    upgraded = tw(capsys, "db", "upgrade")
    assert upgraded.out == f"migrated SQLite database 'tickwork.db' from revision 0001 to {HEAD}\n"


# -- declaration and configuration errors --------------------------------------------------------


def unique_module(workdir: Path, stem: str, source: str) -> str:
    name = f"{stem}_{uuid.uuid4().hex[:6]}"
    write(workdir / f"{name}.py", source)
    return name


def run_with_jobs(workdir: Path, module: str, extra: str = "") -> Result:
    write(workdir / "tickwork.toml", f'[scheduler]\njobs = ["{module}"]\n{extra}')
    return proc("run", "--for", "0.1", cwd=workdir)


def test_a_job_module_with_a_syntax_error(workdir: Path) -> None:
    write(workdir / "synjobs.py", "import tickwork\n\ndef broken(:\n    pass\n")
    err = one_error(run_with_jobs(workdir, "synjobs"), 2)
    assert err == (
        "tickwork: error: cannot import job module 'synjobs' (scheduler.jobs) at synjobs.py:3: "
        "SyntaxError: invalid syntax"
    )


def test_a_job_module_that_raises_while_imported(workdir: Path) -> None:
    module = unique_module(workdir, "raising", "import os\n\nSETTING = os.environ['NO_SUCH_SETTING_XYZ']\n")
    err = one_error(run_with_jobs(workdir, module), 2)
    assert err == (
        f"tickwork: error: cannot import job module '{module}' (scheduler.jobs) at {module}.py:3: "
        "KeyError: 'NO_SUCH_SETTING_XYZ'"
    )


@pytest.mark.parametrize(
    ("decorator", "message"),
    [
        (
            '@tickwork.cron("* * * * *", executor="htp")',
            "unknown executor 'htp' (did you mean 'http'?) (registered executors: ",
        ),
        (
            '@tickwork.cron("* * * * *", executor="http")',
            "executor 'http' is not configured in tickwork.toml: add an [executor.http] table "
            "(configured executors: local)",
        ),
        (
            '@tickwork.cron("* * * * *", misfire="never")',
            "'never' is not a valid MisfirePolicy; choose one of: skip, once, all",
        ),
        ('@tickwork.cron("* * * * *", timezone="Europe/Berln")', "timezone: unknown IANA zone 'Europe/Berln'"),
        ('@tickwork.cron("61 * * * *")', "invalid cron expression '61 * * * *': minute field: 61"),
    ],
)
def test_declaration_mistakes_stop_run_at_start_with_one_line(workdir: Path, decorator: str, message: str) -> None:
    module = unique_module(workdir, "decl", f"import tickwork\n\n\n{decorator}\ndef job() -> None:\n    pass\n")
    err = one_error(run_with_jobs(workdir, module), 2)
    assert err.startswith(f"tickwork: error: {module}.job ({module}.py:4): "), err
    assert message in err


def test_config_typos_and_encoding(capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    write(workdir / "t.toml", "[scheduler]\nmax_slep = 3\n")
    assert one_error(tw(capsys, "jobs", "list", "-c", "t.toml"), 2) == (
        "tickwork: error: t.toml: scheduler.max_slep: unknown key (did you mean `max_sleep`?); known keys: "
        "default_executor, end_batch_window, hard_timeout_grace, history_retention_days, jobs, lookahead, "
        "max_in_flight, max_sleep, misfire, misfire_grace, namespace, namespaces, node_id, reap_interval, "
        "renew_interval, shutdown_grace, start_batch_window, start_grace, start_lead, steal_after, takeover_interval"
    )
    write(workdir / "s.toml", "[schedular]\njobs = []\n")
    assert "unknown table or key 'schedular' (did you mean `scheduler`?)" in one_error(
        tw(capsys, "jobs", "list", "-c", "s.toml"), 2
    )
    (workdir / "latin1.toml").write_bytes('[scheduler]\nnode_id = "n\u00e9"\n'.encode("latin-1"))
    assert one_error(tw(capsys, "jobs", "list", "-c", "latin1.toml"), 2) == (
        "tickwork: error: latin1.toml: not UTF-8 text (byte 0xe9 on line 2); TOML files must be UTF-8"
    )
