"""A newcomer's first quarter of an hour, as a script whose output is checked line by line: the
README's first command (the demo node, started briefly), a zoned ``jobs add`` answered in the
zone's local time, a decorator written without its parentheses, and an expression that can never
fire. Each mistake is one line saying what is wrong and how to write it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tickwork import next_fire_times
from tickwork.scheduling.localtime import local_time

#: The start of a log record: a timestamp, the level, the logger.
RECORD = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?P<level>\w+) +(?P<logger>[\w.]+): "
#: A UTC time as people read it: ``2026-11-26 10:17:50Z`` (seconds only when not zero).
ISO = r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?Z"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (tmp_path / "myapp" / "tasks.py").write_text("def backup() -> None:\n    pass\n")
    return tmp_path


def tickwork(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKWORK_")}
    return subprocess.run(
        [sys.executable, "-m", "tickwork", *args],
        cwd=project,
        env=dict(env, PYTHONPATH=str(project)),
        capture_output=True,
        text=True,
        timeout=120,
    )


def node_records(stderr: str) -> list[str]:
    """The log records of a node, without the runs' own records and their tracebacks (the demo's
    ``flaky`` job fails now and then, on purpose)."""
    kept = []
    for record in re.split(rf"(?m)^(?={RECORD})", stderr):
        start = re.match(RECORD, record)
        if start is not None and start.group("logger") != "tickwork.runs":
            kept.append(record.rstrip("\n"))
    return kept


def _without_optional(records: list[str], marker: str, pattern: str) -> list[str]:
    """``records`` without those holding ``marker``, lines a run may or may not log, each of
    which must match ``pattern``."""
    optional = [r for r in records if marker in r]
    for record in optional:
        assert re.search(pattern, record), record
    return [r for r in records if r not in optional]


def test_a_newcomers_first_steps(project: Path) -> None:
    # 1. The README's first command: the demo node on SQLite, stopped after two seconds.
    node = tickwork(project, "run", "--config", "examples/tickwork.toml", "--for", "2")
    assert node.returncode == 0, node.stderr
    config = project / "examples" / "tickwork.toml"
    expected = [
        r"INFO +tickwork.store: creating the tickwork schema in the empty SQLite database 'tickwork-demo.db'",
        r"INFO +tickwork.schedules: synced examples.demo.jobs: 4 created, 0 updated, 0 unchanged, 0 removed",
        rf"INFO +tickwork.node: node (?P<node>\S+) starting: config {re.escape(str(config.resolve()))}; "
        r"store SQLite database 'tickwork-demo.db' \(sqlite\); membership single; executors local",
        rf"INFO +tickwork.node:   job examples.demo.jobs.heartbeat: cron '\*/5 \* \* \* \* \*' UTC, next fire {ISO}",
        rf"INFO +tickwork.node:   job examples.demo.jobs.quarter_minute: calendar '\*:\*:00/15' UTC, next fire {ISO}",
        rf"INFO +tickwork.node:   job examples.demo.jobs.flaky: interval '7s' UTC, next fire {ISO}",
        rf"INFO +tickwork.node:   job examples.demo.jobs.every_minute: cron '\* \* \* \* \*' UTC, next fire {ISO}",
        r"INFO +tickwork.node: node (?P<node>\S+) stopped: it took \d+ fire\(s\) \(a retry counts once more\) and "
        r"recorded the end of \d+; every run is in the history \(tickwork history -c examples/tickwork\.toml "
        r"--node (?P=node)\)",  # the config file it was given: the hint works when pasted
    ]
    records = node_records(node.stderr)
    # A fire claimed ahead of its time when the stop came is handed back, in plain words.
    records = _without_optional(
        records,
        "tickwork.engine:",
        r"INFO +tickwork.engine: handed \d+ upcoming fire\(s\) back to the cluster: they were claimed early "
        r"to start on time; another node \(or this one's next start\) runs them$",
    )
    # A stop that lands while a job runs (the --for deadline meeting a fire at :00) waits for it,
    # in plain words, before the "stopped" line.
    records = _without_optional(
        records,
        "tickwork.node: stopping: waiting",
        r"INFO +tickwork.node: stopping: waiting up to 30s \(scheduler.shutdown_grace\) for \d+ running job\(s\) "
        r"to end: [\w., ]+; send SIGINT/SIGTERM again to stop now$",
    )
    assert len(records) == len(expected), node.stderr
    for record, pattern in zip(records, expected, strict=True):
        assert re.fullmatch(rf"\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d,\d{{3}} {pattern}", record), record

    # 2. A zoned schedule: the answer is in the zone's local time, with UTC beside it.
    added = tickwork(
        project,
        "jobs",
        "add",
        "backup",
        "0 2 * * *",
        "myapp.tasks:backup",
        "--tz",
        "Europe/Oslo",
        "--config",
        "examples/tickwork.toml",
    )
    [fire] = next_fire_times("0 2 * * *", tz="Europe/Oslo")
    assert (added.returncode, added.stderr) == (0, "")
    assert added.stdout.splitlines() == [f"added backup; next fire {local_time(fire, 'Europe/Oslo')}"]
    assert re.fullmatch(
        r"added backup; next fire \d{4}-\d\d-\d\d 02:00 Europe/Oslo \(0[01]:00Z\)", added.stdout.strip()
    )

    # 3. A decorator without its parentheses: the node refuses to start, saying how to write it.
    (project / "myapp" / "jobs.py").write_text(
        "import tickwork\n\n\n@tickwork.cron\ndef nightly() -> None:\n    pass\n"
    )
    (project / "bare.toml").write_text('[scheduler]\njobs = ["myapp.jobs"]\n')
    bare = tickwork(project, "run", "--config", "bare.toml", "--for", "1")
    assert (bare.returncode, bare.stdout) == (2, "")
    assert bare.stderr.splitlines()[-1] == (
        'tickwork: error: @tickwork.cron needs its expression in parentheses: write @tickwork.cron("0 3 * * *") '
        "above myapp.jobs.nightly (myapp/jobs.py:4)"
    )

    # 4. An expression that can never fire is refused, with the reason.
    never = tickwork(
        project, "jobs", "add", "x", "0 2 31 2 *", "myapp.tasks:backup", "--config", "examples/tickwork.toml"
    )
    assert (never.returncode, never.stdout) == (2, "")
    assert never.stderr.splitlines() == [
        "tickwork: error: cron '0 2 31 2 *' never fires: no date matches it "
        "(is a day of the month past the end of every month it allows?)"
    ]


def test_the_demo_jobs_never_share_a_line_when_they_fire_at_once() -> None:
    """The demo's jobs write their line in one write: with print(), whose text and newline are two
    writes, two jobs firing at the same moment shared a line (seen in the README's first command;
    this script made 287 of 2,400 lines broken)."""
    script = (
        "import threading\n"
        "from examples.demo.jobs import _say\n"
        "def burst(i):\n"
        "    for j in range(300):\n"
        "        _say(f'demo.t{i}: line {j}')\n"
        "threads = [threading.Thread(target=burst, args=(i,)) for i in range(8)]\n"
        "for t in threads: t.start()\n"
        "for t in threads: t.join()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    lines = out.splitlines()
    assert len(lines) == 2400
    broken = [line for line in lines if not re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}  demo\.t\d: line \d+", line)]
    assert broken == []
