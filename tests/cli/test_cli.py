"""The ``tickwork`` command line, run in-process through :func:`tickwork.cli.main`."""

from __future__ import annotations

import json
import sqlite3
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.cli import Tickwork, error_of, run_due_once, stored, write_config
from tests.support.cli import jobs_module as jobs_module  # the fixtures
from tests.support.cli import tw as tw
from tests.support.cli import workdir as workdir
from tickwork import next_fire_times
from tickwork.cli import main
from tickwork.cli.output import duration, short_time
from tickwork.config import load
from tickwork.node import Node
from tickwork.scheduling.localtime import local_time
from tickwork.sql import migrations
from tickwork.structures import MisfirePolicy
from tickwork_sqlite.store import SQLiteStore

NODE_ID = "cli-test-node"
#: The revision `db upgrade` migrates to (the newest migration).
HEAD = migrations.head_revision()


def db_now(path: str = "tickwork.db") -> datetime:
    store = SQLiteStore(path)
    store.open()
    try:
        return store.now()
    finally:
        store.close()


def listed(tw: Tickwork) -> dict[str, dict[str, object]]:
    result = tw("jobs", "list", "--json")
    assert result.code == 0
    rows = [json.loads(line) for line in result.lines]
    return {str(row["name"]): row for row in rows}


def parse_z(text: str) -> datetime:
    assert text.endswith("Z"), text
    return datetime.fromisoformat(text[:-1] + "+00:00")


# -- tickwork next --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["*/15 * * * *", "--after", "2024-01-01T00:07:00Z", "-n", "3"],
            ["2024-01-01T00:15:00Z", "2024-01-01T00:30:00Z", "2024-01-01T00:45:00Z"],
        ),
        # A naive --after is UTC; an offset is honoured.
        (["*/15 * * * *", "--after", "2024-01-01T00:07:00", "-n", "1"], ["2024-01-01T00:15:00Z"]),
        (["*/15 * * * *", "--after", "2024-01-01T02:07:00+02:00", "-n", "1"], ["2024-01-01T00:15:00Z"]),
        # 6 fields: seconds first.
        (
            ["* * * * * *", "--after", "2024-01-01T00:00:00.5Z", "-n", "3"],
            ["2024-01-01T00:00:01Z", "2024-01-01T00:00:02Z", "2024-01-01T00:00:03Z"],
        ),
        # --tz: 09:00 Paris is 08:00Z in winter (CET) and 07:00Z in summer (CEST), shown both ways.
        (
            ["0 9 * * *", "--tz", "Europe/Paris", "--after", "2024-01-15T00:00:00Z"],
            ["2024-01-15 09:00 Europe/Paris (08:00Z)"],
        ),
        (
            ["0 9 * * *", "--tz", "Europe/Paris", "--after", "2024-07-15T00:00:00Z"],
            ["2024-07-15 09:00 Europe/Paris (07:00Z)"],
        ),
        # interval (epoch-anchored) and once, recognised without --kind.
        (["90s", "--after", "2024-01-01T00:00:00Z", "-n", "2"], ["2024-01-01T00:01:30Z", "2024-01-01T00:03:00Z"]),
        (["every 2h", "--kind", "interval", "--after", "2024-01-01T01:00:00Z"], ["2024-01-01T02:00:00Z"]),
        (["2024-05-01T14:00:00+02:00", "--after", "2024-01-01T00:00:00Z"], ["2024-05-01T12:00:00Z"]),
        (["*/15 * * * *", "--after", "2024-01-01T00:07:00Z", "-n", "0"], []),
        # calendar (systemd), recognised without --kind; 2024-01-05 is a Friday.
        (
            ["Mon..Fri 09:00", "--after", "2024-01-05T10:00:00Z", "-n", "3"],
            ["2024-01-08T09:00:00Z", "2024-01-09T09:00:00Z", "2024-01-10T09:00:00Z"],
        ),
        (["*:*:00/15", "--after", "2024-01-01T00:00:00Z", "-n", "2"], ["2024-01-01T00:00:15Z", "2024-01-01T00:00:30Z"]),
        (["daily", "--kind", "calendar", "--after", "2024-01-01T12:00:00Z"], ["2024-01-02T00:00:00Z"]),
        (
            ["Mon..Fri 09:00", "--tz", "America/New_York", "--after", "2024-07-01T00:00:00Z"],
            ["2024-07-01 09:00 America/New_York (13:00Z)"],
        ),
    ],
)
def test_next_prints_fire_times_one_per_line_local_with_tz(tw: Tickwork, args: list[str], expected: list[str]) -> None:
    result = tw("next", *args)
    assert (result.code, result.lines, result.err) == (0, expected, "")


def test_next_defaults_to_one_fire_time_after_now(tw: Tickwork) -> None:
    before = datetime.now(UTC)
    result = tw("next", "* * * * *")
    assert result.code == 0
    [line] = result.lines
    fire = parse_z(line)
    assert before < fire <= before + timedelta(minutes=1)
    assert (fire.second, fire.microsecond) == (0, 0)


def test_next_with_fewer_fire_times_than_asked_says_so_on_stderr(tw: Tickwork) -> None:
    result = tw("next", "2024-05-01T12:00:00Z", "--after", "2024-01-01T00:00:00Z", "-n", "3")
    assert (result.code, result.lines) == (0, ["2024-05-01T12:00:00Z"])
    assert "fires 1 time(s) after 2024-01-01T00:00:00Z" in result.err
    result = tw("next", "2024-05-01T12:00:00Z", "--after", "2025-01-01T00:00:00Z")
    assert (result.code, result.out) == (0, "")
    assert "fires 0 time(s)" in result.err


@pytest.mark.parametrize(
    ("args", "normalized"),
    [
        (["*/5 * * * *"], "0 */5 * * * *"),
        (["0 9 * * mon-fri"], "0 0 9 * * 1-5"),
        (["@daily"], "0 0 0 * * *"),
        (["90s"], "1m30s"),
        (["2024-05-01T14:00:00+02:00"], "2024-05-01T12:00:00Z"),
        (["Mon..Fri 09:00"], "Mon..Fri *-*-* 09:00:00"),
    ],
)
def test_next_normalize_prints_the_normalized_trigger(tw: Tickwork, args: list[str], normalized: str) -> None:
    result = tw("next", *args, "--normalize")
    assert (result.code, result.lines) == (0, [normalized])


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["61 * * * *"], "minute field: 61 in '61' is out of range 0-59"),
        (["bogus"], "cannot tell the kind of 'bogus'"),
        (["90s", "--kind", "cron"], "cron expression '90s' has 1 fields"),
        (["* * * * *", "--kind", "nosuch"], "unknown trigger plugin 'nosuch'; registered trigger plugins: "),
        (["* * * * *", "--tz", "Nowhere/City"], "unknown IANA zone 'Nowhere/City'"),
        (["* * * * *", "--kind", "calendar"], "invalid calendar expression '* * * * *'"),
        (["bogus", "--normalize"], "cannot tell the kind of 'bogus'"),
    ],
)
def test_next_rejects_invalid_input_with_the_reason_and_exit_2(tw: Tickwork, args: list[str], reason: str) -> None:
    assert reason in error_of(tw("next", *args), 2)


def test_next_lists_the_registered_kinds_when_it_cannot_tell(tw: Tickwork) -> None:
    err = error_of(tw("next", "bogus"), 2)
    for kind in ("calendar", "cron", "interval", "once"):
        assert kind in err


@pytest.mark.parametrize("args", [["-n", "-1"], ["--after", "yesterday"], ["--log-level", "LOUD"]])
def test_next_rejects_bad_options_like_any_usage_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["next", "* * * * *", *args])
    assert info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("expression", "kind", "tz", "after"),
    [
        ("*/7 3-5 * * *", None, None, "2024-03-30T00:00:00Z"),
        ("30 2 * * *", "cron", "Europe/Berlin", "2024-03-29T00:00:00Z"),  # 02:30 skipped on 2024-03-31
        ("0 30 1 * * *", None, "America/New_York", "2024-11-02T12:00:00Z"),  # 01:30 repeated on 2024-11-03
        ("45m", None, None, "2024-01-01T00:10:00Z"),
        ("2030-01-01T00:00:00", "once", "Asia/Tokyo", "2024-01-01T00:00:00Z"),
        ("Sat,Sun *-*-* 02:30", None, "Europe/Berlin", "2024-03-29T00:00:00Z"),
        ("*-*-01 00:00:00", "calendar", None, "2024-01-15T00:00:00Z"),
    ],
)
def test_next_and_the_library_agree(
    tw: Tickwork, expression: str, kind: str | None, tz: str | None, after: str
) -> None:
    args = ["next", expression, "--after", after, "-n", "5"]
    if kind:
        args += ["--kind", kind]
    if tz:
        args += ["--tz", tz]
    result = tw(*args)
    assert result.code == 0
    times = next_fire_times(expression, kind=kind, tz=tz, after=parse_z(after), n=5)
    assert times, "every case has at least one fire time"
    for value in times:
        assert value.tzinfo is not None and value.utcoffset() == timedelta(0)
    assert times == sorted(times) and times[0] > parse_z(after)
    # In the expression's zone with UTC beside it when one is given; ISO-8601 UTC otherwise.
    assert result.lines == [local_time(t, tz) if tz else t.isoformat().replace("+00:00", "Z") for t in times]


def test_library_next_fire_times_edges() -> None:
    after = datetime(2024, 1, 1, 0, 7)
    assert next_fire_times("*/15 * * * *", after=after, n=2) == [
        datetime(2024, 1, 1, 0, 15, tzinfo=UTC),
        datetime(2024, 1, 1, 0, 30, tzinfo=UTC),
    ]
    assert next_fire_times("*/15 * * * *", after=after, n=0) == []
    with pytest.raises(ValueError, match="n: must be >= 0"):
        next_fire_times("*/15 * * * *", n=-1)
    [fire] = next_fire_times("* * * * *")
    assert fire > datetime.now(UTC) - timedelta(seconds=1)


# -- tickwork jobs ----------------------------------------------------------------------------------


def test_jobs_add_validates_then_list_shows_it(tw: Tickwork, jobs_module: str) -> None:
    before = db_now() if Path("tickwork.db").exists() else datetime.now(UTC)
    result = tw("jobs", "add", "tick", "*/10 * * * *", f"{jobs_module}:ok")
    assert result.code == 0, result
    assert result.out.startswith("added tick; next fire 20")
    row = listed(tw)["tick"]
    assert row == {
        "name": "tick",
        "namespace": "default",
        "kind": "cron",
        "expression": "*/10 * * * *",
        "timezone": "UTC",
        "executor": "local",
        "target": f"{jobs_module}:ok",
        "arguments": {},
        "enabled": True,
        "next_fire": row["next_fire"],
        "state": "idle",
        "claimed_by": None,
        "module": None,
        "timeout": 300.0,
        "retries": 0,
        "retry_backoff": 10.0,
        "misfire": None,
        "last_status": None,
        "last_run_at": None,
        "fault": None,
        "fault_kind": None,
        "health": {
            "state": "healthy",
            "reason": "no runs yet",
            "last_success": None,
            "last_failure": None,
            "consecutive_failures": 0,
            "usual_duration": None,
            "alerting": False,
        },
        "pause": None,
        "failures": 0,
        "run_count": 0,
        "finished": False,
        "version": 1,
        "applied_version": None,
        "drift": False,
        "pause_after_failures": None,
        "jitter": 0.0,
        "start_at": None,
        "end_at": None,
        "misfire_grace": None,
        "max_catchup": None,
        "max_runs": None,
        "on_finish": "keep",
        "on_abandon": "skip",
        "also": [],
        "exclude": [],
        "overlap": "skip",
        "max_concurrent": None,
        "concurrency_key": None,
        "concurrency_limit": None,
        "holidays": None,
        "on_holiday": "skip",
    }
    assert isinstance(row["next_fire"], str)
    assert parse_z(row["next_fire"]) == next_fire_times("*/10 * * * *", after=before)[0]
    text = tw("jobs", "list")
    assert text.code == 0
    [line] = text.lines
    shown = local_time(parse_z(row["next_fire"]), "UTC")  # for people: 2026-11-26 10:50Z
    assert line == f"tick\tcron\t*/10 * * * *\tUTC\t{shown}\tidle\thealthy\t-\tlocal\t{jobs_module}:ok"


def test_jobs_add_with_every_option(tw: Tickwork, jobs_module: str) -> None:
    result = tw(
        "jobs", "add", "eu-report", "every 1h", f"{jobs_module}:needs",
        "--kind", "interval", "--tz", "Europe/Paris", "--args", '{"region": "eu"}',
        "--timeout", "12.5", "--misfire", "once", "--retries", "2", "--disabled",
    )  # fmt: skip
    assert result.code == 0, result
    assert result.out == "added eu-report; next fire -\n"
    s = stored("eu-report")
    spec = s.spec
    assert (spec.trigger_kind, spec.expression, spec.timezone) == ("interval", "every 1h", "Europe/Paris")
    assert spec.arguments == {"region": "eu"}
    assert spec.timeout == timedelta(seconds=12.5)
    assert (spec.misfire, spec.retries, spec.enabled, spec.module) == (MisfirePolicy.ONCE, 2, False, None)
    assert s.next_fire is None
    assert tw("jobs", "list").lines[0].split("\t")[4:6] == ["-", "disabled"]


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["* * * * *", "no_such_module_xyz:f"], "cannot resolve target 'no_such_module_xyz:f'"),
        (["* * * * *", "{mod}:missing"], "cannot resolve target '{mod}:missing'"),
        (["* * * * *", "not-a-reference"], "reference must look like 'package.module:function'"),
        (["* * * * *", "{mod}:CALLS"], "is not callable"),
        (["* * * * *", "{mod}:needs"], "no stored argument for required parameter(s): region"),
        (["* * * * *", "{mod}:ok", "--args", "{nope"], "--args: not valid JSON"),
        (["* * * * *", "{mod}:ok", "--args", "[1]"], "--args: must be a JSON object"),
        (["61 * * * *", "{mod}:ok"], "minute field: 61"),
        (["whenever", "{mod}:ok"], "cannot tell the kind of 'whenever'"),
        (["* * * * *", "{mod}:ok", "--tz", "Mars/Olympus"], "unknown IANA zone 'Mars/Olympus'"),
        (["* * * * *", "{mod}:ok", "--executor", "grpc"], "unknown executor plugin 'grpc'; registered executor"),
        (["* * * * *", "ftp://example.com/x", "--executor", "http"], "must use http or https, not 'ftp'"),
        (["* * * * *", "{mod}:needs", "--args", '{"regoin": "eu"}'], "it does not accept regoin (it accepts: region)"),
        (["* * * * *", "{mod}:ok", "--executor", "jobqueue"], "executor 'jobqueue' is not configured in tickwork.toml"),
        (["* * * * *", "{mod}:ok", "--tz", "Europe/Berln"], "unknown IANA zone 'Europe/Berln'"),
    ],
)
def test_jobs_add_rejects_bad_input_with_exit_2_and_stores_nothing(
    tw: Tickwork, jobs_module: str, args: list[str], reason: str
) -> None:
    write_config(Path("tickwork.toml"), "[executor.http]\n")
    assert tw("db", "upgrade").code == 0
    args = [a.replace("{mod}", jobs_module) for a in args]
    assert reason.replace("{mod}", jobs_module) in error_of(tw("jobs", "add", "bad", *args), 2)
    assert listed(tw) == {}


def test_jobs_add_recognises_each_kind(tw: Tickwork, jobs_module: str) -> None:
    cases = {"c": "*/5 * * * *", "cal": "Mon..Fri 09:00", "i": "every 10m", "o": "2099-01-01T00:00:00Z"}
    for name, expression in cases.items():
        assert tw("jobs", "add", name, expression, f"{jobs_module}:ok").code == 0
    kinds = {name: row["kind"] for name, row in listed(tw).items()}
    assert kinds == {"c": "cron", "cal": "calendar", "i": "interval", "o": "once"}
    assert listed(tw)["o"]["next_fire"] == "2099-01-01T00:00:00Z"


def test_jobs_add_accepts_an_http_target_once_the_http_executor_is_configured(tw: Tickwork) -> None:
    err = error_of(tw("jobs", "add", "hook", "0 3 * * *", "https://example.com/hooks/x", "--executor", "http"), 2)
    assert err == (
        "tickwork: error: executor 'http' is not configured in the configuration, so no node would run it: "
        "add an [executor.http] table (configured executors: local)\n"
    )
    write_config(Path("tickwork.toml"), "[executor.http]\n")
    assert tw("jobs", "add", "hook", "0 3 * * *", "https://example.com/hooks/x", "--executor", "http").code == 0
    row = listed(tw)["hook"]
    assert (row["executor"], row["target"]) == ("http", "https://example.com/hooks/x")


def test_jobs_add_of_an_existing_name_fails_with_exit_1(tw: Tickwork, jobs_module: str) -> None:
    assert tw("jobs", "add", "dup", "* * * * *", f"{jobs_module}:ok").code == 0
    assert "a schedule named 'dup' already exists" in error_of(
        tw("jobs", "add", "dup", "*/2 * * * *", f"{jobs_module}:ok"), 1
    )
    assert listed(tw)["dup"]["expression"] == "* * * * *"


def test_jobs_add_finds_targets_in_the_working_directory(tw: Tickwork, workdir: Path) -> None:
    module = f"cwd_jobs_{uuid.uuid4().hex[:8]}"
    (workdir / f"{module}.py").write_text("def run() -> None:\n    pass\n", encoding="utf-8")
    saved = list(sys.path)
    try:
        while str(workdir) in sys.path:
            sys.path.remove(str(workdir))
        assert tw("jobs", "add", "cwd", "* * * * *", f"{module}:run").code == 0
    finally:
        sys.path[:] = saved
        sys.modules.pop(module, None)


def test_disable_clears_the_next_fire_and_the_schedule_does_not_fire(tw: Tickwork, jobs_module: str) -> None:
    assert tw("jobs", "add", "quiet", "* * * * *", f"{jobs_module}:ok").code == 0
    assert tw("jobs", "trigger", "quiet").code == 0  # due now ...
    result = tw("jobs", "disable", "quiet")  # ... but disabled before any node saw it
    assert (result.code, result.out) == (0, "disabled quiet; next fire -\n")
    row = listed(tw)["quiet"]
    assert (row["enabled"], row["next_fire"]) == (False, None)
    node = run_due_once()
    assert node.engine.fired == 0
    assert tw("history", "--json").out == ""
    assert "schedule 'quiet' is disabled; enable it first" in error_of(tw("jobs", "trigger", "quiet"), 1)


def test_enable_computes_the_next_fire_from_now(tw: Tickwork, jobs_module: str) -> None:
    assert tw("jobs", "add", "back", "* * * * *", f"{jobs_module}:ok").code == 0
    assert tw("jobs", "trigger", "back").code == 0
    assert tw("jobs", "disable", "back").code == 0
    before = db_now()
    result = tw("jobs", "enable", "back")
    after = db_now()
    assert result.code == 0
    s = stored("back")
    assert s.spec.enabled
    assert s.next_fire is not None
    # The next minute boundary after the moment of enabling: neither the old trigger time nor a catch-up.
    assert s.next_fire in (next_fire_times("* * * * *", after=before)[0], next_fire_times("* * * * *", after=after)[0])
    assert s.next_fire > before
    assert result.out == f"enabled back; next fire {local_time(s.next_fire, 'UTC')}\n"


def test_trigger_makes_it_due_now_and_a_node_runs_it(tw: Tickwork, jobs_module: str) -> None:
    assert tw("jobs", "add", "now", "0 0 1 1 *", f"{jobs_module}:ok").code == 0
    before = db_now()
    result = tw("jobs", "trigger", "now")
    after = db_now()
    assert result.code == 0
    due = stored("now").next_fire
    assert due is not None and before <= due <= after
    assert result.out == f"triggered now; due {local_time(due, 'UTC')}\n"
    node = run_due_once()
    assert node.engine.fired == 1
    [run] = [json.loads(line) for line in tw("history", "--json").lines]
    assert (run["schedule"], run["status"], parse_z(run["scheduled_for"])) == ("now", "succeeded", due)
    # After the run the schedule is back on its own trigger.
    assert stored("now").next_fire == next_fire_times("0 0 1 1 *", after=due)[0]


def test_remove_deletes_the_schedule_and_its_history(tw: Tickwork, jobs_module: str) -> None:
    assert tw("jobs", "add", "gone", "* * * * *", f"{jobs_module}:ok").code == 0
    assert tw("jobs", "add", "kept", "* * * * *", f"{jobs_module}:ok").code == 0
    assert tw("jobs", "trigger", "gone").code == 0
    run_due_once()
    assert tw("history", "--schedule", "gone").lines
    result = tw("jobs", "remove", "gone")
    assert (result.code, result.out, result.err) == (0, "removed gone\n", "")
    assert set(listed(tw)) == {"kept"}
    assert tw("history", "--json").out == ""


@pytest.mark.parametrize("action", ["remove", "enable", "disable", "trigger"])
def test_unknown_schedule_names_exit_1_with_a_message(tw: Tickwork, action: str) -> None:
    assert tw("db", "upgrade").code == 0
    assert "no schedule named 'ghost'" in error_of(tw("jobs", action, "ghost"), 1)


def test_removing_a_declared_job_warns_that_the_next_start_recreates_it(
    tw: Tickwork, jobs_module: str, workdir: Path
) -> None:
    config = write_config(workdir / "tickwork.toml", f'[scheduler]\njobs = ["{jobs_module}"]\n')
    run_due_once(str(config))
    assert listed(tw)["declared-yearly"]["module"] == jobs_module
    result = tw("jobs", "remove", "declared-yearly")
    assert (result.code, result.out) == (0, "removed declared-yearly\n")
    assert f"declared in {jobs_module}; the next node start re-creates it" in result.err
    run_due_once(str(config))
    assert "declared-yearly" in listed(tw)


def test_removing_several_with_a_declared_job_among_them_notes_it_once(
    tw: Tickwork, jobs_module: str, workdir: Path
) -> None:
    config = write_config(workdir / "tickwork.toml", f'[scheduler]\njobs = ["{jobs_module}"]\n')
    run_due_once(str(config))
    assert tw("jobs", "add", "kept", "* * * * *", f"{jobs_module}:ok").code == 0
    assert tw("jobs", "add", "gone", "* * * * *", f"{jobs_module}:ok").code == 0
    result = tw("--json", "jobs", "remove", "declared-yearly", "gone")
    assert result.code == 0
    assert [json.loads(line)["name"] for line in result.out.splitlines()] == ["declared-yearly", "gone"]
    assert result.err == (
        f"tickwork: note: 1 of them is declared in code ({jobs_module}); the next node start re-creates "
        "them unless the declarations change\n"
    )
    assert "kept" in listed(tw) and "gone" not in listed(tw) and "declared-yearly" not in listed(tw)


# -- tickwork history / nodes / db ----------------------------------------------------------------


def test_history_json_has_one_object_per_run_with_the_documented_fields(tw: Tickwork, jobs_module: str) -> None:
    assert tw("jobs", "add", "good", "0 0 1 1 *", f"{jobs_module}:ok").code == 0
    assert tw("jobs", "add", "bad", "0 0 1 1 *", f"{jobs_module}:boom").code == 0
    write_config(Path("tickwork.toml"), f'[scheduler]\nnode_id = "{NODE_ID}"\n')
    assert tw("jobs", "trigger", "good").code == 0
    assert tw("jobs", "trigger", "bad").code == 0
    run_due_once()
    result = tw("history", "--json")
    assert result.code == 0
    runs = {r["schedule"]: r for r in map(json.loads, result.lines)}
    assert set(runs) == {"good", "bad"}
    for run in runs.values():
        assert {"schedule", "scheduled_for", "started_at", "finished_at", "status", "node", "error"} <= set(run)
        assert run["node"] == NODE_ID
        scheduled, started, finished = (parse_z(run[k]) for k in ("scheduled_for", "started_at", "finished_at"))
        assert scheduled <= started <= finished
    assert (runs["good"]["status"], runs["good"]["error"]) == ("succeeded", None)
    assert runs["bad"]["status"] == "failed"

    assert len(tw("history", "--json", "--limit", "1").lines) == 1
    [only] = tw("history", "--json", "--schedule", "bad").lines
    assert json.loads(only)["schedule"] == "bad"
    text = tw("history", "--schedule", "bad").lines
    assert len(text) == 1
    run_id, scheduled, schedule, attempt, status, node, started, took, error = text[0].split("\t")
    assert (run_id, scheduled, started) == (
        str(runs["bad"]["id"]),
        short_time(parse_z(runs["bad"]["scheduled_for"])),
        short_time(parse_z(runs["bad"]["started_at"])),
    )
    assert took == duration(parse_z(runs["bad"]["started_at"]), parse_z(runs["bad"]["finished_at"]))
    assert (schedule, attempt, status, node) == ("bad", "1", "failed", "cli-test-node")
    assert error == "RuntimeError: boom from job"
    # The JSON keeps the summary and the traceback apart.
    assert runs["bad"]["error"] == "RuntimeError: boom from job"
    assert runs["bad"]["traceback"].startswith("Traceback (most recent call last):")
    assert runs["good"]["traceback"] is None


def test_history_limit_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["history", "--limit", "0"])
    assert info.value.code == 2
    assert "must be >= 1" in capsys.readouterr().err


def test_nodes_lists_running_nodes(tw: Tickwork) -> None:
    write_config(Path("tickwork.toml"), f'[scheduler]\nnode_id = "{NODE_ID}"\n')
    node = Node(load())
    node.open()
    try:
        result = tw("nodes")
    finally:
        node.shutdown()
    assert result.code == 0
    [line] = result.lines
    node_id, status, age, started, heartbeat, executors = line.split("\t")
    assert (node_id, status, executors) == (NODE_ID, "live", "local")
    assert age.endswith("s")
    assert parse_z(started) <= parse_z(heartbeat)
    # A node that stopped cleanly leaves the list; the empty result is said on stderr.
    gone = tw("nodes")
    assert (gone.code, gone.out) == (0, "")
    assert gone.err == "tickwork: no nodes (none is running, or none has started on this store yet)\n"


def test_db_upgrade_creates_and_then_keeps_the_schema(tw: Tickwork, workdir: Path) -> None:
    result = tw("db", "upgrade")
    assert (result.code, result.out) == (
        0,
        f"created the tickwork schema in SQLite database 'tickwork.db' (revision {HEAD})\n",
    )
    result = tw("db", "upgrade")
    assert (result.code, result.out) == (
        0,
        f"SQLite database 'tickwork.db' is already at the latest schema (revision {HEAD}); nothing to do\n",
    )
    assert (workdir / "tickwork.db").is_file()


# -- schema checks -----------------------------------------------------------------------------------


def stamp(revision: str, path: str = "tickwork.db") -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE tickwork_alembic_version SET version_num = ?", (revision,))


def test_a_new_sqlite_file_is_created_and_a_node_runs(tw: Tickwork, workdir: Path) -> None:
    result = tw("run", "--for", "0.2")
    assert result.code == 0, result
    assert (workdir / "tickwork.db").is_file()


def test_an_sqlite_file_with_an_unknown_or_older_schema_is_refused(tw: Tickwork) -> None:
    assert tw("db", "upgrade").code == 0
    stamp("0000")
    for args in (["run", "--for", "0.2"], ["jobs", "list"], ["history"]):
        err = error_of(tw(*args), 1)
        assert "is at revision 0000" in err
        assert "run `tickwork db upgrade`" in err
    # The node never started, so it left no heartbeat behind.
    with sqlite3.connect("tickwork.db") as conn:
        assert conn.execute("SELECT count(*) FROM tickwork_nodes").fetchone() == (0,)
    # A revision this tickwork does not know cannot be migrated either; said without a traceback.
    assert "Can't locate revision identified by '0000'" in error_of(tw("db", "upgrade"), 1)


def test_create_false_refuses_an_empty_sqlite_file_until_db_upgrade(tw: Tickwork, workdir: Path) -> None:
    write_config(workdir / "tickwork.toml", "[store]\ncreate = false\n")
    err = error_of(tw("run", "--for", "0.2"), 1)
    assert "none (empty database)" in err and "run `tickwork db upgrade`" in err
    assert tw("db", "upgrade").code == 0
    assert tw("run", "--for", "0.2").code == 0


def test_postgres_node_refuses_an_out_of_date_schema_naming_db_upgrade(
    tw: Tickwork, workdir: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TW_TEST_PG_URL", postgres_url)
    config = write_config(workdir / "pg.toml", '[store]\nplugin = "postgres"\nurl = "${TW_TEST_PG_URL}"\n')
    err = error_of(tw("run", "--for", "0.2", "--config", str(config)), 1)
    assert "PostgreSQL database" in err
    assert "none (empty database)" in err and "run `tickwork db upgrade`" in err
    upgraded = tw("db", "upgrade", "--config", str(config))
    assert upgraded.code == 0 and upgraded.out.startswith("created the tickwork schema in PostgreSQL database ")
    assert tw("run", "--for", "0.2", "--config", str(config)).code == 0

    import sqlalchemy

    engine = sqlalchemy.create_engine(postgres_url)
    try:
        with engine.begin() as conn:
            conn.execute(sqlalchemy.text("UPDATE tickwork_alembic_version SET version_num = '0000'"))
    finally:
        engine.dispose()
    err = error_of(tw("run", "--for", "0.2", "--config", str(config)), 1)
    assert "is at revision 0000" in err and "run `tickwork db upgrade`" in err


# -- configuration errors -----------------------------------------------------------------------------


def test_config_errors_name_the_file_and_key_and_exit_2(tw: Tickwork, workdir: Path) -> None:
    bad = write_config(workdir / "bad.toml", "[scheduler]\nmax_slep = 3\n")
    assert f"{bad}: scheduler.max_slep: unknown key" in error_of(tw("jobs", "list", "--config", str(bad)), 2)
    typed = write_config(workdir / "typed.toml", '[store]\nbusy_timeout = "long"\n')
    assert f"{typed}: store.busy_timeout: expected int or float" in error_of(tw("run", "-c", str(typed)), 2)
    plugin = write_config(workdir / "plugin.toml", '[store]\nplugin = "oracle"\n')
    assert "unknown store plugin 'oracle'; registered store plugins: mysql, postgres, sqlite" in error_of(
        tw("nodes", "--config", str(plugin)), 2
    )
    assert "does not exist" in error_of(tw("history", "--config", str(workdir / "missing.toml")), 2)


def test_tickwork_config_environment_variable_is_used(
    tw: Tickwork, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(workdir / "elsewhere.toml", '[store]\npath = "from-env.db"\n')
    monkeypatch.setenv("TICKWORK_CONFIG", str(config))
    created = tw("db", "upgrade").out
    assert created == f"created the tickwork schema in SQLite database 'from-env.db' (revision {HEAD})\n"
    assert not (workdir / "tickwork.db").exists()


def test_a_job_module_that_cannot_be_imported_stops_run_with_exit_2(tw: Tickwork, workdir: Path) -> None:
    write_config(workdir / "tickwork.toml", '[scheduler]\njobs = ["no_such_jobs_module_xyz"]\n')
    err = error_of(tw("run", "--for", "0.2"), 2)
    assert "cannot import job module 'no_such_jobs_module_xyz' (scheduler.jobs)" in err


def test_run_rejects_a_non_positive_duration(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run", "--for", "-1"])
    assert info.value.code == 2
    assert "must be a positive number of seconds" in capsys.readouterr().err
