"""``allowed_modules``: a target outside the list is refused when added, and again at run time,
before its module is ever imported (the local executor, the jobqueue executor and its workers).

The "outside" module writes a marker file when imported and another when run, so each test sees
whether any of its code ran, not only what tickwork reported.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support.jobqueue_helpers import Outcomes, call, rows, run_worker
from tests.support.local_helpers import Recorder, allowed_modules_config, job_call
from tickwork.cli import main
from tickwork.config import load
from tickwork.errors import ConfigError, ExecutorError
from tickwork.node import Node
from tickwork.plugin.allowed import AllowedModules
from tickwork.structures import RunStatus, ScheduleSpec
from tickwork_jobqueue.executor import JobQueueExecutor
from tickwork_jobqueue.worker import Worker
from tickwork_local.executor import LocalExecutor

MODULE_SOURCE = """
from pathlib import Path

Path({imported!r}).write_text("imported")


def run() -> None:
    Path({ran!r}).write_text("ran")
"""


@dataclass(frozen=True)
class Modules:
    trusted: str  # a package name given to allowed_modules
    outsider: str  # a module outside it, with marker files
    imported: Path
    ran: Path

    @property
    def inside_target(self) -> str:
        return f"{self.trusted}.jobs:run"

    @property
    def outside_target(self) -> str:
        return f"{self.outsider}:run"

    def untouched(self) -> bool:
        return not self.imported.exists() and not self.ran.exists()


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Modules]:
    tag = uuid.uuid4().hex[:8]
    trusted, outsider = f"trusted_{tag}", f"outsider_{tag}"
    code = tmp_path / "code"
    (code / trusted).mkdir(parents=True)
    (code / trusted / "__init__.py").write_text("")
    (code / trusted / "jobs.py").write_text("def run() -> None:\n    pass\n")
    imported, ran = tmp_path / "imported", tmp_path / "ran"
    (code / f"{outsider}.py").write_text(MODULE_SOURCE.format(imported=str(imported), ran=str(ran)))
    monkeypatch.syspath_prepend(str(code))
    yield Modules(trusted, outsider, imported, ran)
    for name in (outsider, trusted, f"{trusted}.jobs"):
        sys.modules.pop(name, None)


# -- the allow-list itself --------------------------------------------------------------------------


def test_an_entry_admits_its_package_and_everything_below_it() -> None:
    allowed = AllowedModules(["myapp.", "reports.jobs"], "allowed_modules")
    assert [allowed.allows(m) for m in ("myapp", "myapp.tasks", "reports.jobs", "reports.jobs.daily")] == [True] * 4
    assert [allowed.allows(m) for m in ("myapplication", "reports", "reports.jobsx", "os", "")] == [False] * 5


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([], "must be a non-empty list of module names"),
        ("myapp.", "must be a non-empty list of module names"),
        (["my app"], "'my app' is not a module name"),
        (["myapp:run"], "'myapp:run' is not a module name"),
        ([".myapp"], "'.myapp' is not a module name"),
        ([3], "3 is not a module name"),
    ],
)
def test_malformed_lists_are_config_errors(entries: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=f"^allowed_modules: {message}"):
        AllowedModules(entries, "allowed_modules")


# -- the local executor -----------------------------------------------------------------------------


def test_local_refuses_an_outside_target_when_added_without_importing_it(modules: Modules) -> None:
    executor = LocalExecutor(allowed_modules=[f"{modules.trusted}."])

    executor.validate_target(modules.inside_target, {})
    with pytest.raises(ExecutorError) as caught:
        executor.validate_target(modules.outside_target, {})
    with pytest.raises(ExecutorError, match="'os:system' is outside"):
        executor.validate_target("os:system", {"command": "true"})

    assert str(caught.value) == (
        f"target '{modules.outside_target}' is outside [executor.local] allowed_modules ({modules.trusted}); "
        "it is not imported or run"
    )
    assert modules.untouched()


def test_without_allowed_modules_any_target_is_accepted(modules: Modules) -> None:
    LocalExecutor().validate_target(modules.outside_target, {})
    assert modules.imported.exists()  # which is exactly why the option exists


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_local_refuses_an_outside_target_again_at_run_time(modules: Modules, mode: str) -> None:
    executor = LocalExecutor(allowed_modules=[modules.trusted], mode=mode)
    executor.start()
    try:
        recorder = Recorder()
        executor.submit(job_call(modules.outside_target), recorder)
        outcome = recorder.wait()
    finally:
        executor.shutdown()

    assert outcome.status is RunStatus.FAILED
    assert outcome.error is not None and "is outside [executor.local] allowed_modules" in outcome.error
    assert modules.untouched()


def test_jobs_add_refuses_an_outside_target_with_a_clear_error(
    modules: Modules, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(allowed_modules_config(tmp_path, modules.trusted))

    refused = main(["jobs", "add", "--config", config, "evil", "@hourly", modules.outside_target])
    _, err = capsys.readouterr()
    added = main(["jobs", "add", "--config", config, "fine", "@hourly", modules.inside_target])

    assert refused == 2
    assert err == (
        f"tickwork: error: target '{modules.outside_target}' is outside [executor.local] allowed_modules "
        f"({modules.trusted}); it is not imported or run\n"
    )
    assert added == 0
    assert modules.untouched()


def test_a_schedule_written_straight_into_the_table_is_refused_at_run_time(modules: Modules, tmp_path: Path) -> None:
    node = Node(load(str(allowed_modules_config(tmp_path, modules.trusted))))
    node.open()
    try:
        # What anyone with write access to the database can do, bypassing every tickwork check.
        spec = ScheduleSpec(name="planted", trigger_kind="interval", expression="1h", target=modules.outside_target)
        node.store.add(spec, node.store.now() - timedelta(seconds=1))
        node.engine.tick()
    finally:
        node.shutdown()
    store = Node(load(str(allowed_modules_config(tmp_path, modules.trusted)))).store
    store.open()
    try:
        [run] = store.history()
    finally:
        store.close()

    assert run.status is RunStatus.FAILED
    assert run.error is not None and f"target '{modules.outside_target}' is outside" in run.error
    assert modules.untouched()


# -- the jobqueue executor and its workers ----------------------------------------------------------


@pytest.fixture
def queue(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'queue.db'}"


def test_jobqueue_refuses_an_outside_target_when_added_and_when_enqueuing(modules: Modules, queue: str) -> None:
    executor = JobQueueExecutor(queue, allowed_modules=[modules.trusted], import_targets=False)
    with pytest.raises(ExecutorError, match=r"is outside \[executor\.jobqueue\] allowed_modules"):
        executor.validate_target(modules.outside_target, {})
    executor.start()
    try:
        outcomes = Outcomes()
        executor.submit(call(1, "planted", modules.outside_target), outcomes)
        executor.submit(call(2, "fine", modules.inside_target), outcomes)
        got = outcomes.wait(2)
    finally:
        executor.shutdown()

    by_status = {o.status: o for o in got}
    assert set(by_status) == {RunStatus.FAILED, RunStatus.SUCCEEDED}
    error = by_status[RunStatus.FAILED].error
    assert error is not None and error.startswith(f"not enqueued: target '{modules.outside_target}' is outside")
    assert [row["target"] for row in rows(queue)] == [modules.inside_target]
    assert modules.untouched()


def _enqueue_unchecked(queue: str, *targets: str) -> None:
    """Enqueue like a scheduler without an allow-list (or anyone writing the queue table)."""
    executor = JobQueueExecutor(queue, import_targets=False)
    executor.start()
    try:
        outcomes = Outcomes()
        for run_id, target in enumerate(targets, start=1):
            executor.submit(call(run_id, f"job-{run_id}", target), outcomes)
        assert {o.status for o in outcomes.wait(len(targets))} == {RunStatus.SUCCEEDED}
    finally:
        executor.shutdown()


def test_a_worker_fails_an_outside_job_without_importing_it(modules: Modules, queue: str) -> None:
    _enqueue_unchecked(queue, modules.outside_target, modules.inside_target)

    worker = Worker(queue, allowed_modules=[f"{modules.trusted}."])
    try:
        worker.run(once=True)
    finally:
        worker.close()

    states = {row["target"]: (row["state"], row["error"]) for row in rows(queue)}
    assert states[modules.inside_target] == ("done", None)
    state, error = states[modules.outside_target]
    assert state == "failed" and f"target '{modules.outside_target}' is outside --allowed-modules" in error
    assert modules.untouched()


def test_the_worker_command_takes_the_list_from_its_option_or_environment(
    modules: Modules, queue: str, tmp_path: Path
) -> None:
    _enqueue_unchecked(queue, modules.outside_target)
    code = str(tmp_path / "code")

    bad = run_worker("--url", queue, "--once", "--allowed-modules", "my app", PYTHONPATH=code)
    ran = run_worker("--url", queue, "--once", TICKWORK_JOBQUEUE_ALLOWED_MODULES=modules.trusted, PYTHONPATH=code)

    assert bad.returncode == 2
    assert "error: --allowed-modules: 'my app' is not a module name" in bad.stderr
    assert ran.returncode == 0, ran.stderr
    [row] = rows(queue)
    assert row["state"] == "failed" and "is outside --allowed-modules" in row["error"]
    assert modules.untouched()
