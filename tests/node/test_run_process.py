"""``tickwork run`` as a real process: ``--for`` and SIGTERM/SIGINT stop it cleanly."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import textwrap
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pytest

from tests.support.processes import PROCESS_TIMEOUT_S, lines, tickwork_command
from tickwork.cli import main
from tickwork.node.process import GC_YOUNG_THRESHOLD

pytestmark = pytest.mark.slow


JOBS = '''
"""Jobs for the process tests: each run appends to a file next to this module."""

import gc
import json
import os
import time
from datetime import datetime, timezone

import tickwork

HERE = os.path.dirname(os.path.abspath(__file__))


def _append(name: str, text: str) -> None:
    with open(os.path.join(HERE, name), "a", encoding="utf-8") as fh:
        fh.write(text + "\\n")
        fh.flush()


@tickwork.cron("* * * * * *", name="every-second", enabled=os.environ.get("PROC_JOB") == "quick")
def every_second() -> None:
    _append("fired.txt", datetime.now(timezone.utc).isoformat())


@tickwork.cron("* * * * * *", name="slow", enabled=os.environ.get("PROC_JOB") == "slow")
def slow() -> None:
    _append("slow.txt", "start")
    time.sleep(0.8)
    _append("slow.txt", "end")


@tickwork.cron("* * * * * *", name="gc-probe", enabled=os.environ.get("PROC_JOB") == "gc")
def gc_probe() -> None:
    _append("gc.txt", json.dumps([gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()]))
'''

CONFIG = """
[scheduler]
jobs = ["proc_jobs"]
node_id = "proc-node"

[store]
path = "${PROC_DB}"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "proc_jobs.py").write_text(textwrap.dedent(JOBS), encoding="utf-8")
    (tmp_path / "tickwork.toml").write_text(textwrap.dedent(CONFIG), encoding="utf-8")
    return tmp_path


def env_for(project: Path, job: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TICKWORK_CONFIG"}
    env.update(PROC_DB=str(project / "proc.db"), PROC_JOB=job, PYTHONUNBUFFERED="1")
    return env


def tickwork(project: Path, args: Sequence[str], job: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*tickwork_command(), *args],
        cwd=project,
        env=env_for(project, job),
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )


def in_process(project: Path, args: Sequence[str], capsys: pytest.CaptureFixture[str], err_text: str = "") -> str:
    """Run a read-only command in this process (faster than another interpreter start); its stderr
    must be ``err_text``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        mp.setenv("PROC_DB", str(project / "proc.db"))
        mp.delenv("TICKWORK_CONFIG", raising=False)
        code = main(list(args))
    out, err = capsys.readouterr()
    assert (code, err) == (0, err_text)
    return out


def history(project: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    out = in_process(project, ["history", "--json", "--limit", "1000"], capsys)
    return [json.loads(line) for line in out.splitlines()]


def when(value: object) -> datetime:
    assert isinstance(value, str) and value.endswith("Z"), value
    return datetime.fromisoformat(value)


def test_run_for_stops_cleanly_after_that_long(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = tickwork(project, ["run", "--for", "4"], job="quick")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "node proc-node stopped" in result.stderr

    fired = [datetime.fromisoformat(line) for line in lines(project / "fired.txt")]
    # Once per whole second of the 4 s window: 4, or 3 to 5 depending on where the window's edges fall.
    assert 3 <= len(fired) <= 5, fired
    runs = [r for r in history(project, capsys) if r["schedule"] == "every-second"]
    assert [r["status"] for r in runs] == ["succeeded"] * len(fired)
    due = sorted(when(r["scheduled_for"]) for r in runs)
    # One run per distinct whole second, consecutive: nothing doubled, nothing skipped.
    assert all(d.microsecond == 0 for d in due)
    assert [(b - a).total_seconds() for a, b in itertools.pairwise(due)] == [1.0] * (len(due) - 1)
    assert {r["node"] for r in runs} == {"proc-node"}
    # Each run started at or after its due time.
    assert all(when(r["started_at"]) >= when(r["scheduled_for"]) for r in runs)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_node_after_its_running_job_ends(
    project: Path, signum: signal.Signals, capsys: pytest.CaptureFixture[str]
) -> None:
    process = subprocess.Popen(
        [*tickwork_command(), "run"],
        cwd=project,
        env=env_for(project, "slow"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + PROCESS_TIMEOUT_S
        # Signal while a run is in flight: it has started and not ended.
        while lines(project / "slow.txt").count("start") < 1:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the slow job never started"
            time.sleep(0.02)
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=PROCESS_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert f"received {signum.name}; stopping after running jobs end" in stderr

    events = lines(project / "slow.txt")
    assert events.count("start") == events.count("end") >= 1  # the run in flight was allowed to finish
    runs = [r for r in history(project, capsys) if r["schedule"] == "slow"]
    assert runs
    assert not [r for r in runs if r["status"] == "running" or r["finished_at"] is None]
    assert sum(r["status"] == "succeeded" for r in runs) == events.count("end")
    # The node left the cluster on its way out.
    no_nodes = "tickwork: no nodes (none is running, or none has started on this store yet)\n"
    assert in_process(project, ["nodes"], capsys, no_nodes) == ""


def test_tickwork_run_tunes_the_garbage_collector_of_its_process(project: Path) -> None:
    result = tickwork(project, ["run", "--for", "2", "--log-level", "DEBUG"], job="gc")
    assert result.returncode == 0, result.stderr
    assert "garbage collector tuned for this node's process" in result.stderr
    seen = [json.loads(line) for line in lines(project / "gc.txt")]
    assert seen, result.stderr
    for threshold, frozen, enabled in seen:
        # The interpreter's default young threshold (700) raised; what start-up built frozen;
        # the collector, held while the node started, running again.
        assert threshold[0] == GC_YOUNG_THRESHOLD
        assert frozen > 0
        assert enabled
