"""A user's project outside this repository tests its ``async def`` and ``RunContext`` jobs with
the harness, through the installed tickwork: its tests pass when the jobs work and fail when a job
body is broken (an async job used to be reported ``succeeded`` without its body ever running)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

JOBS = """
from __future__ import annotations

import asyncio

import tickwork

SENT: list[str] = []


@tickwork.every("10s")
async def send_digest() -> str:
    await asyncio.sleep(0)
    {async_body}
    return "sent"


@tickwork.every("1m")
def export(run: tickwork.RunContext) -> str:
    {context_body}
"""

TESTS = """
from datetime import UTC, datetime

from tickwork import RunStatus
from tickwork.testing import SchedulerHarness

import myjobs


def test_digest_is_sent_every_ten_seconds():
    myjobs.SENT.clear()
    with SchedulerHarness(jobs=["myjobs"], start=datetime(2026, 3, 2, 12, 0, tzinfo=UTC)) as harness:
        runs = [r for r in harness.advance(30) if r.schedule == "myjobs.send_digest"]
    assert [r.status for r in runs] == [RunStatus.SUCCEEDED] * 3
    assert [r.result for r in runs] == ["sent"] * 3
    assert myjobs.SENT == ["12:00:10", "12:00:20", "12:00:30"]


def test_export_names_its_fire_time():
    with SchedulerHarness(jobs=["myjobs"], start=datetime(2026, 3, 2, 12, 0, tzinfo=UTC)) as harness:
        runs = [r for r in harness.advance(60) if r.schedule == "myjobs.export"]
    assert [(r.status, r.result) for r in runs] == [(RunStatus.SUCCEEDED, "export-12:01")]
"""

GOOD_ASYNC = 'SENT.append(f"{tickwork.current_run().scheduled_for:%H:%M:%S}")'
GOOD_CONTEXT = 'return f"export-{run.scheduled_for:%H:%M}"'


def run_user_tests(tmp_path: Path, async_body: str, context_body: str) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "myjobs.py").write_text(textwrap.dedent(JOBS).format(async_body=async_body, context_body=context_body))
    (project / "test_myjobs.py").write_text(textwrap.dedent(TESTS))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(project), str(project)],
        cwd=project,
        env=dict(env, PYTHONPATH=str(project)),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_user_project_passes_with_working_jobs(tmp_path: Path) -> None:
    done = run_user_tests(tmp_path, GOOD_ASYNC, GOOD_CONTEXT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_a_broken_async_body_fails_the_users_test(tmp_path: Path) -> None:
    done = run_user_tests(tmp_path, 'raise RuntimeError("smtp down")', GOOD_CONTEXT)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout


def test_a_broken_context_job_fails_the_users_test(tmp_path: Path) -> None:
    done = run_user_tests(tmp_path, GOOD_ASYNC, 'return f"export-{run.schedule_for:%H:%M}"')
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
