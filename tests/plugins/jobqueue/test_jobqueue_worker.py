"""Workers: how a job's end is recorded, stale and left-over jobs, several worker processes sharing
one queue (each job runs exactly once), and the command line (real processes, real databases)."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.jobqueue_helpers import (
    PROCESS_TIMEOUT_S,
    ROOT,
    Outcomes,
    call,
    queue_url_for,
    rows,
    worker_command,
    worker_env,
)
from tickwork.structures import RunStatus
from tickwork_jobqueue.executor import JobQueueExecutor
from tickwork_jobqueue.schema import JobState
from tickwork_jobqueue.worker import MAX_ERROR_CHARS, URL_ENV, Worker, main

JOBS = "tests.support.queue_jobs"


@pytest.fixture(params=["sqlite", "postgres"])
def queue_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return queue_url_for(request.param, request, tmp_path)


def enqueue(url: str, *calls: tuple[str, str, dict[str, Any]]) -> None:
    """Enqueue ``(schedule, target, arguments)`` jobs through a real executor."""
    executor = JobQueueExecutor(url, threads=4)
    executor.start()
    try:
        outcomes = Outcomes()
        for run_id, (schedule, target, arguments) in enumerate(calls, start=1):
            executor.submit(call(run_id, schedule, target, **arguments), outcomes)
        got = outcomes.wait(len(calls))
    finally:
        executor.shutdown()
    assert all(o.status is RunStatus.SUCCEEDED for o in got), got


def run_once(url: str, **options: Any) -> Worker:
    worker = Worker(url, **options)
    try:
        worker.run(once=True)
    finally:
        worker.close()
    return worker


def test_a_failing_job_is_recorded_with_its_traceback(queue_url: str, tmp_path: Path) -> None:
    enqueue(
        queue_url,
        ("boom", f"{JOBS}:fail", {"message": "disk full"}),
        ("huge", f"{JOBS}:fail", {"message": "x" * 20_000}),
        ("gone", "worker_only_package.tasks:reindex", {}),
        ("async", f"{JOBS}:async_append", {"path": str(tmp_path / "async.txt"), "text": "a"}),
    )
    worker = run_once(queue_url, name="w1")
    assert (worker.done, worker.failed) == (1, 3)
    # Enqueued from several threads: look rows up by schedule, not by position.
    by_schedule = {r["schedule"]: r for r in rows(queue_url)}
    boom, huge, gone, async_job = (by_schedule[s] for s in ("boom", "huge", "gone", "async"))
    assert boom["state"] == "failed" and boom["worker"] == "w1"
    assert boom["error"].startswith("RuntimeError: disk full\nTraceback (most recent call last):")
    assert "queue_jobs.py" in boom["error"]
    assert huge["state"] == "failed" and len(huge["error"]) <= MAX_ERROR_CHARS + 100
    assert huge["error"].startswith("RuntimeError: xxx") and "[traceback cut]" in huge["error"]
    assert gone["state"] == "failed" and gone["error"].startswith("ModuleNotFoundError: No module named 'worker_only")
    assert async_job["state"] == "done" and (tmp_path / "async.txt").read_text().startswith("a ")


def test_a_job_of_a_dead_worker_is_failed_as_stale_and_unblocks_its_schedule(queue_url: str, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    enqueue(queue_url, ("report", f"{JOBS}:append_line", {"path": str(out), "text": "late"}))
    dead = Worker(queue_url, name="dead", stale_after=0.5)
    dead.open()
    live = Worker(queue_url, name="live", stale_after=0.5)
    live.open()
    try:
        job = dead.claim()  # ... and "dead" never sends a heartbeat
        assert job is not None
        assert live.sweep() == []  # not stale yet
        time.sleep(0.6)
        assert live.sweep() == [job.id]
        (row,) = rows(queue_url)
        assert row["state"] == "failed" and "worker dead sent no heartbeat since" in row["error"]
        assert "presumed dead" in row["error"]
        # The "dead" worker was only slow: its late end must not overwrite the verdict.
        assert dead.execute(job) is JobState.DONE
        (row,) = rows(queue_url)
        assert row["state"] == "failed" and row["worker"] == "dead"
    finally:
        dead.close()
        live.close()
    enqueue(queue_url, ("report", f"{JOBS}:append_line", {"path": str(out), "text": "again"}))
    assert [r["state"] for r in rows(queue_url)] == ["failed", "queued"]


def test_heartbeats_keep_a_long_job_alive(queue_url: str, tmp_path: Path) -> None:
    """A job running 2.4x longer than stale_after is not failed while its worker sends heartbeats."""
    # stale_after 1.5 s (heartbeats every 0.5 s): with 0.5 s, one heartbeat delayed by a third
    # of a second under CI's four workers made the sweeper see a live worker as stale.
    enqueue(queue_url, ("slow", f"{JOBS}:slow_append", {"path": str(tmp_path / "o"), "text": "t", "seconds": 3.6}))
    worker = Worker(queue_url, name="w", stale_after=1.5)
    sweeper = Worker(queue_url, name="sweeper", stale_after=1.5)
    sweeper.open()
    try:
        thread = threading.Thread(target=worker.run, kwargs={"once": True})
        thread.start()
        swept: list[int] = []
        while thread.is_alive():
            swept += sweeper.sweep()
            time.sleep(0.05)
        thread.join()
    finally:
        worker.close()
        sweeper.close()
    assert swept == []
    (row,) = rows(queue_url)
    assert row["state"] == "done" and row["heartbeat_at"] > row["started_at"]


def test_a_restarted_worker_fails_what_its_previous_process_left_running(queue_url: str, tmp_path: Path) -> None:
    enqueue(queue_url, ("report", f"{JOBS}:append_line", {"path": str(tmp_path / "o"), "text": "t"}))
    first = Worker(queue_url, name="w1")
    first.open()
    assert first.claim() is not None
    first.close()  # killed mid-job
    second = Worker(queue_url, name="w1")
    second.open()
    second.close()
    (row,) = rows(queue_url)
    assert row["state"] == "failed" and row["error"] == "worker w1 restarted while the job was running"


def test_worker_processes_sharing_a_queue_run_each_job_exactly_once(queue_url: str, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    count = 20
    enqueue(
        queue_url,
        *(
            (f"s{i}", f"{JOBS}:slow_append", {"path": str(out), "text": f"job{i}", "seconds": 0.02})
            for i in range(count)
        ),
    )
    workers = [
        subprocess.Popen(
            worker_command("--once", "--concurrency", "2", "--name", f"w{n}"),
            cwd=ROOT,
            env=worker_env(**{URL_ENV: queue_url}),  # the URL from the environment, as with a password
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    for proc in workers:
        _, stderr = proc.communicate(timeout=PROCESS_TIMEOUT_S)
        assert proc.returncode == 0, stderr
    ran = Counter(line.split()[0] for line in out.read_text().splitlines())
    assert ran == Counter({f"job{i}": 1 for i in range(count)})
    final = rows(queue_url)
    assert [r["state"] for r in final] == ["done"] * count
    assert {r["worker"] for r in final} <= {"w0", "w1"}


def test_sigterm_lets_the_running_job_finish_and_keeps_it_alive(tmp_path: Path) -> None:
    """After SIGTERM the worker takes no new job but keeps sending heartbeats until its job ends,
    so no other worker fails the job as stale meanwhile."""
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    out = tmp_path / "out.txt"
    enqueue(url, ("slow", f"{JOBS}:slow_append", {"path": str(out), "text": "finished", "seconds": 1.2}))
    proc = subprocess.Popen(
        worker_command("--url", url, "--poll-interval", "0.05", "--stale-after", "0.5", "--name", "w"),
        cwd=ROOT,
        env=worker_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    sweeper = Worker(url, name="sweeper", stale_after=0.5)
    sweeper.open()
    swept: list[int] = []
    try:
        deadline = time.monotonic() + PROCESS_TIMEOUT_S
        while rows(url)[0]["state"] != "running":
            assert time.monotonic() < deadline and proc.poll() is None, "the worker never started the job"
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        while proc.poll() is None:
            assert time.monotonic() < deadline, "the worker did not stop"
            swept += sweeper.sweep()
            time.sleep(0.05)
        _, stderr = proc.communicate(timeout=PROCESS_TIMEOUT_S)
    finally:
        sweeper.close()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert "received SIGTERM" in stderr
    assert swept == []
    (row,) = rows(url)
    assert row["state"] == "done" and out.read_text().startswith("finished ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "--url is required (or set $TICKWORK_JOBQUEUE_URL)"),
        (["--url", "mysql://db/jobs"], "--url: unsupported database 'mysql'"),
        (["--url", "sqlite:///q.db", "--concurrency", "0"], "--concurrency: must be >= 1, got 0"),
    ],
)
def test_command_line_errors_exit_2_with_a_message(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(URL_ENV, raising=False)
    try:
        status = main(args)
    except SystemExit as exc:  # argparse's own usage errors
        status = exc.code  # type: ignore[assignment]
    assert status == 2
    assert message in capsys.readouterr().err
