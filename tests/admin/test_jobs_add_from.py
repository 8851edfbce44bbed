"""``tickwork jobs add --from FILE`` and ``Admin.add_many``: many run-time schedules in one
transaction, every entry validated first, errors naming the file and line (issue #18). Real
``tickwork`` processes against a real SQLite file and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import tickwork
from tests.support.forkedcli import run_tickwork
from tests.support.paths import REPO
from tickwork.structures import Fault, Finish, Outcome, RunStatus
from tickwork_postgres.store import PostgresStore

RECORD = "tests.support.jobs_for_tests:record"
YEARLY = "0 0 1 1 *"  # a schedule not due during a test: only what a test triggers is claimed


def tw(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    done = run_tickwork(args, cwd=cwd, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def names(cwd: Path) -> list[str]:
    listed = tw(cwd, "jobs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return [json.loads(line)["name"] for line in listed.stdout.splitlines()]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "tickwork.toml").write_text('[store]\nplugin = "sqlite"\npath = "t.db"\n')
    assert tw(tmp_path, "db", "upgrade").returncode == 0
    return tmp_path


@pytest.fixture
def pg_store(postgres_url: str) -> Iterator[PostgresStore]:
    """An open store on the test database, its schema upgraded first."""
    store = PostgresStore(postgres_url)
    store.upgrade()
    store.open()
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def pg_admin(pg_store: PostgresStore, postgres_url: str) -> Iterator[tickwork.Admin]:
    with tickwork.connect({"store": {"plugin": "postgres", "url": postgres_url}}) as admin:
        yield admin


def jsonl(count: int) -> str:
    return "".join(
        json.dumps({"name": f"bulk-{i:04d}", "expression": "0 3 * * *", "target": RECORD}) + "\n" for i in range(count)
    )


def test_add_from_a_json_lines_file(workdir: Path) -> None:
    (workdir / "many.jsonl").write_text("# nightly jobs\n\n" + jsonl(1500))
    done = tw(workdir, "jobs", "add", "--from", "many.jsonl")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "added 1500 schedules from many.jsonl\n"
    assert names(workdir) == [f"bulk-{i:04d}" for i in range(1500)]


def test_add_from_a_toml_file_with_options(workdir: Path) -> None:
    (workdir / "jobs.toml").write_text(
        "[[schedule]]\n"
        'name = "oslo"\nexpression = "0 9 * * 1-5"\n'
        f'target = "{RECORD}"\ntz = "Europe/Oslo"\nretries = 2\n'
        "\n[[schedule]]\n"
        f'name = "poll"\nexpression = "90s"\ntarget = "{RECORD}"\nenabled = false\n'
    )
    done = tw(workdir, "--json", "jobs", "add", "--from", "jobs.toml")
    assert done.returncode == 0, done.stderr
    added = {info["name"]: info for info in map(json.loads, done.stdout.splitlines())}
    assert added["oslo"]["timezone"] == "Europe/Oslo" and added["oslo"]["retries"] == 2
    assert added["poll"]["kind"] == "interval" and added["poll"]["enabled"] is False


def line(**fields: object) -> str:
    return json.dumps(fields) + "\n"


GOOD = line(name="a", expression="0 3 * * *", target=RECORD)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (GOOD + line(name="b", expression="61 * * * *", target=RECORD), "many.jsonl:2: minute field: 61"),
        (GOOD + '{"name": "b",\n', "many.jsonl:2: invalid JSON"),
        (line(name="a", expression="0 3 * * *"), "many.jsonl:1: missing field(s) target"),
        (line(name="a", expression="0 3 * * *", target=RECORD, colour="red"), "many.jsonl:1: unknown field(s) colour"),
        (
            GOOD + "\n" + line(name="a", expression="0 4 * * *", target=RECORD),
            "many.jsonl:3: schedule name 'a' is also on line 1",
        ),
        ("[1, 2]\n", "many.jsonl:1: expected a JSON object, got list"),
        (GOOD + line(name="b", expression="0 3 * * *", target="no_such_module_x:f"), "many.jsonl:2: "),
    ],
)
def test_a_bad_file_is_one_error_line_naming_file_and_line_and_adds_nothing(
    workdir: Path, text: str, message: str
) -> None:
    (workdir / "many.jsonl").write_text(text)
    done = tw(workdir, "jobs", "add", "--from", "many.jsonl")
    assert done.returncode == 2
    assert done.stderr.startswith("tickwork: error: ") and message in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert names(workdir) == []


def test_every_problem_of_a_file_is_listed_in_line_order_and_nothing_is_added(workdir: Path) -> None:
    (workdir / "many.jsonl").write_text(
        GOOD
        + line(name="b", expression="61 * * * *", target=RECORD)
        + line(name="c", expression="0 3 * * *", target="no_such_module_x:f")
        + "not json\n"
        + line(name="d", expression="0 3 * * *", target=RECORD, timeout="NaN")
        + line(name="a", expression="0 4 * * *", target=RECORD)
    )
    done = tw(workdir, "jobs", "add", "--from", "many.jsonl")
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert [text.split(": ")[2] for text in lines] == [f"many.jsonl:{n}" for n in (2, 3, 4, 5, 6)] + ["many.jsonl"]
    assert "minute field: 61" in lines[0] and "no_such_module_x" in lines[1] and "invalid JSON" in lines[2]
    assert lines[3].endswith(
        "timeout: expected a finite number of seconds or a duration like '90s', '5m', '1h30m', got str 'NaN'"
    )
    assert lines[4].endswith("schedule name 'a' is also on line 1")
    assert lines[5] == "tickwork: error: many.jsonl: 5 problems; nothing was added"
    assert names(workdir) == []


def test_a_file_of_many_bad_entries_lists_the_first_twenty(workdir: Path) -> None:
    (workdir / "many.jsonl").write_text(
        "".join(line(name=f"n{i}", expression="61 * * * *", target=RECORD) for i in range(25))
    )
    done = tw(workdir, "jobs", "add", "--from", "many.jsonl")
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 21 and lines[19].startswith("tickwork: error: many.jsonl:20: minute field: 61")
    assert lines[20] == "tickwork: error: many.jsonl: 25 problems (the first 20 are listed); nothing was added"


def test_one_schedule_added_is_one_schedule(workdir: Path) -> None:
    (workdir / "one.jsonl").write_text(GOOD)
    done = tw(workdir, "jobs", "add", "--from", "one.jsonl")
    assert (done.returncode, done.stdout) == (0, "added 1 schedule from one.jsonl\n")


def test_a_bad_toml_entry_names_the_line_of_its_table(workdir: Path) -> None:
    (workdir / "jobs.toml").write_text(
        f'[[schedule]]\nname = "a"\nexpression = "0 3 * * *"\ntarget = "{RECORD}"\n\n'
        f'[[schedule]]\nname = "b"\nexpression = "0 3 * * *"\ntarget = "{RECORD}"\ntz = "Mars/Base"\n'
    )
    done = tw(workdir, "jobs", "add", "--from", "jobs.toml")
    assert done.returncode == 2
    assert done.stderr.startswith("tickwork: error: jobs.toml:6: ") and "Mars/Base" in done.stderr, done.stderr
    assert names(workdir) == []


def test_a_name_already_taken_adds_nothing_and_replace_replaces(workdir: Path) -> None:
    assert tw(workdir, "jobs", "add", "bulk-0001", "0 5 * * *", RECORD).returncode == 0
    (workdir / "many.jsonl").write_text(jsonl(3))
    done = tw(workdir, "jobs", "add", "--from", "many.jsonl")
    assert done.returncode == 1
    assert done.stderr == (
        "tickwork: error: many.jsonl:2: a schedule named 'bulk-0001' already exists; nothing was added "
        "(--replace replaces run-time schedules)\n"
    )
    assert names(workdir) == ["bulk-0001"]
    assert tw(workdir, "jobs", "add", "--from", "many.jsonl", "--replace").returncode == 0
    shown = tw(workdir, "--json", "jobs", "show", "bulk-0001")
    assert json.loads(shown.stdout)["expression"] == "0 3 * * *"
    assert names(workdir) == ["bulk-0000", "bulk-0001", "bulk-0002"]


def test_every_taken_name_is_named_with_its_line(workdir: Path) -> None:
    for name in ("bulk-0000", "bulk-0002"):
        assert tw(workdir, "jobs", "add", name, "0 5 * * *", RECORD).returncode == 0
    (workdir / "many.jsonl").write_text(jsonl(3))
    done = tw(workdir, "jobs", "add", "--from", "many.jsonl")
    assert done.returncode == 1
    assert done.stderr == (
        "tickwork: error: many.jsonl: schedules named 'bulk-0000' (line 1), 'bulk-0002' (line 3) already exist; "
        "nothing was added (--replace replaces run-time schedules)\n"
    )
    assert names(workdir) == ["bulk-0000", "bulk-0002"]


def test_add_needs_positionals_or_a_file_not_both(workdir: Path) -> None:
    (workdir / "many.jsonl").write_text(jsonl(1))
    both = tw(workdir, "jobs", "add", "x", "0 3 * * *", RECORD, "--from", "many.jsonl")
    assert both.returncode == 2 and "not both" in both.stderr
    neither = tw(workdir, "jobs", "add")
    assert neither.returncode == 2 and "give NAME EXPRESSION TARGET, or --from FILE" in neither.stderr


def test_admin_add_many_is_one_transaction_on_postgres(pg_admin: tickwork.Admin) -> None:
    admin = pg_admin
    admin.add("taken", "0 5 * * *", RECORD)
    wanted = [{"name": f"pg-{i:04d}", "expression": "*/5 * * * *", "target": RECORD} for i in range(2500)]
    with pytest.raises(tickwork.ScheduleExistsError, match="taken"):
        admin.add_many([*wanted, {"name": "taken", "expression": "0 3 * * *", "target": RECORD}])
    assert admin.count() == 1
    added = admin.add_many(wanted)
    assert [info.name for info in added] == [w["name"] for w in wanted]
    assert admin.count() == 2501
    assert all(info.next_fire is not None and info.next_fire.minute % 5 == 0 for info in added)


def test_remove_several_names_or_every_schedule_of_a_file(workdir: Path) -> None:
    (workdir / "many.jsonl").write_text(jsonl(1500))
    assert tw(workdir, "jobs", "add", "--from", "many.jsonl").returncode == 0
    done = tw(workdir, "jobs", "remove", "bulk-0000", "bulk-0001")
    assert (done.returncode, done.stdout) == (0, "removed 2 schedules\n"), done.stderr
    assert len(names(workdir)) == 1498
    (workdir / "rest.jsonl").write_text("".join(jsonl(1500).splitlines(keepends=True)[2:]))
    done = tw(workdir, "jobs", "remove", "--from", "rest.jsonl")
    assert (done.returncode, done.stdout) == (0, "removed 1498 schedules of rest.jsonl\n"), done.stderr
    assert names(workdir) == []


def test_remove_of_a_missing_name_removes_nothing_and_names_every_missing_one(workdir: Path) -> None:
    (workdir / "many.jsonl").write_text(jsonl(3))
    assert tw(workdir, "jobs", "add", "--from", "many.jsonl").returncode == 0
    done = tw(workdir, "jobs", "remove", "bulk-0000", "nope-1", "bulk-0002", "nope-2")
    assert done.returncode == 1
    assert done.stderr == "tickwork: error: no schedules named 'nope-1', 'nope-2'; nothing was removed\n"
    assert names(workdir) == ["bulk-0000", "bulk-0001", "bulk-0002"]
    (workdir / "bad.jsonl").write_text(line(name="bulk-0000") + line(expression="0 3 * * *") + "[1]\n")
    done = tw(workdir, "jobs", "remove", "--from", "bad.jsonl")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "tickwork: error: bad.jsonl:2: expected a schedule name (a non-empty string in field name), got None",
        "tickwork: error: bad.jsonl:3: expected a JSON object, got list",
        "tickwork: error: bad.jsonl: 2 problems; nothing was removed",
    ]
    assert names(workdir) == ["bulk-0000", "bulk-0001", "bulk-0002"]


def test_remove_needs_names_or_a_file_not_both(workdir: Path) -> None:
    (workdir / "many.jsonl").write_text(jsonl(1))
    both = tw(workdir, "jobs", "remove", "x", "--from", "many.jsonl")
    assert both.returncode == 2 and "not both" in both.stderr
    neither = tw(workdir, "jobs", "remove")
    assert neither.returncode == 2 and "give NAME..., or --from FILE" in neither.stderr


def test_admin_remove_many_is_one_transaction_with_the_history_on_postgres(
    pg_admin: tickwork.Admin, pg_store: PostgresStore
) -> None:
    admin, store = pg_admin, pg_store
    # Due once a year, so that only the triggered fire is due when claimed: with */5 a boundary
    # passed while a loaded machine added the 2,500 and the claim took ten of them (CI, once).
    wanted = [{"name": f"rm-{i:04d}", "expression": YEARLY, "target": RECORD} for i in range(2500)]
    admin.add_many(wanted)
    admin.trigger("rm-0007")
    claimed = store.claim_due("n1", limit=10, buckets=None)
    assert [c.spec.name for c in claimed] == ["rm-0007"] and claimed[0].run_id is not None
    assert len(store.history(schedule="rm-0007")) == 1
    with pytest.raises(tickwork.ScheduleNotFoundError) as missing:
        admin.remove_many(["rm-0001", "gone-1", "rm-0002", "gone-2"])
    assert missing.value.names == ("gone-1", "gone-2")
    assert admin.count() == 2500 and len(store.history()) == 1
    removed = admin.remove_many([w["name"] for w in wanted[:2000]] + ["rm-0001"])
    assert [info.name for info in removed] == [w["name"] for w in wanted[:2000]]
    assert admin.count() == 500 and admin.get("rm-2000").name == "rm-2000"
    # The claimed run's row went with its schedule.
    assert store.history() == []
    with pytest.raises(tickwork.ConfigError, match="expected a list of names"):
        admin.remove_many("rm-2000")
    assert admin.remove_many([]) == []


def test_disable_and_enable_several_names_or_every_schedule_of_a_file(workdir: Path) -> None:
    (workdir / "many.jsonl").write_text(jsonl(1500))
    assert tw(workdir, "jobs", "add", "--from", "many.jsonl").returncode == 0
    done = tw(workdir, "jobs", "disable", "--from", "many.jsonl")
    assert (done.returncode, done.stdout) == (0, "disabled 1500 schedules of many.jsonl\n"), done.stderr
    listed = [json.loads(line) for line in tw(workdir, "jobs", "list", "--json").stdout.splitlines()]
    assert len(listed) == 1500 and all(not s["enabled"] and s["next_fire"] is None for s in listed)
    done = tw(workdir, "--json", "jobs", "enable", "bulk-0003", "bulk-0001")
    assert done.returncode == 0, done.stderr
    enabled = [json.loads(line) for line in done.stdout.splitlines()]
    assert [s["name"] for s in enabled] == ["bulk-0003", "bulk-0001"]
    assert all(s["enabled"] and s["next_fire"].endswith("T03:00:00Z") for s in enabled)
    missing = tw(workdir, "jobs", "enable", "bulk-0004", "nope")
    assert (missing.returncode, missing.stderr) == (
        1,
        "tickwork: error: no schedule named 'nope'; nothing was enabled\n",
    )
    assert tw(workdir, "--json", "jobs", "show", "bulk-0004").stdout.count('"enabled": false') == 1


def test_admin_enable_many_and_disable_many_on_postgres_all_or_none_and_unpark(
    pg_admin: tickwork.Admin, pg_store: PostgresStore
) -> None:
    admin, store = pg_admin, pg_store
    admin.add_many([{"name": f"en-{i}", "expression": YEARLY, "target": RECORD} for i in range(3)])
    admin.trigger("en-0")
    (claim,) = store.claim_due("n1", limit=10, buckets=None)
    assert store.park("n1", [(Finish(claim, Outcome(RunStatus.FAILED), None), Fault("TriggerError: bad zone"))])
    assert admin.get("en-0").fault == "TriggerError: bad zone"
    with pytest.raises(tickwork.ScheduleNotFoundError) as missing:
        admin.disable_many(["en-1", "gone"])
    assert missing.value.names == ("gone",) and admin.get("en-1").enabled
    disabled = admin.disable_many(["en-0", "en-1", "en-2", "en-1"])
    assert [(i.name, i.enabled, i.next_fire) for i in disabled] == [
        ("en-0", False, None),
        ("en-1", False, None),
        ("en-2", False, None),
    ]
    assert disabled[0].fault is None and disabled[0].last_run is not None  # unparked; history kept
    before = store.now()
    enabled = admin.enable_many(["en-2", "en-0"])
    assert [i.name for i in enabled] == ["en-2", "en-0"]
    assert all(i.enabled and i.next_fire is not None and i.next_fire > before for i in enabled)
    assert not admin.get("en-1").enabled
    with pytest.raises(tickwork.ConfigError, match="enable_many: expected a list of names"):
        admin.enable_many("en-1")
