"""``allowed_modules`` checks what is run, not only the module named before the ``:``.

A module of the allowed package that does ``import os`` used to hand out ``os.system`` through
its attribute path (``trusted.jobs:os.system``). Every door is tried with such targets: adding a
schedule (the executors' ``validate_target``, ``Admin.add`` and the real ``tickwork jobs add``),
the local executor at run time (thread and process mode, a row written straight into the table),
and the jobqueue worker (rows written straight into the queue, in-process and the real command).
The planted module's side effects are files: a refused target must leave none behind.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import tickwork
from tests.support.jobqueue_helpers import Outcomes, call, rows, run_worker
from tests.support.local_helpers import Recorder, allowed_modules_config
from tickwork.config import load
from tickwork.errors import ExecutorError
from tickwork.node import Node
from tickwork.structures import RunStatus, ScheduleSpec
from tickwork_jobqueue.executor import JobQueueExecutor
from tickwork_jobqueue.worker import Worker
from tickwork_local.executor import LocalExecutor

TIMEOUT_S = 60  # guards against a hung process; not a timing assertion

# The allowed module: its own jobs, and what it imported from elsewhere (which it must not lend).
JOBS_SOURCE = """
import functools
import os
from os import system
from os.path import join
from pathlib import Path

MARKS = Path({marks!r})


def run(name: str = "run") -> None:
    (MARKS / name).write_text("ran")


async def arun() -> None:
    (MARKS / "arun").write_text("ran")


class Jobs:
    @staticmethod
    def static() -> None:
        (MARKS / "static").write_text("ran")

    @classmethod
    def klass(cls) -> None:
        (MARKS / "klass").write_text("ran")

    def __call__(self) -> None:
        (MARKS / "instance").write_text("ran")


instance = Jobs()
touch = functools.partial(run, "partial")
"""


@dataclass(frozen=True)
class Planted:
    package: str  # the allowed_modules entry
    code: Path  # on sys.path (and PYTHONPATH of the processes)
    marks: Path  # where the planted module's jobs leave their files

    @property
    def jobs(self) -> str:
        return f"{self.package}.jobs"

    def target(self, path: str) -> str:
        return f"{self.jobs}:{path}"

    def left(self) -> list[str]:
        return sorted(p.name for p in self.marks.iterdir())


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Planted]:
    package = f"rrjobs_{uuid.uuid4().hex[:8]}"
    code, marks = tmp_path / "code", tmp_path / "marks"
    (code / package).mkdir(parents=True)
    marks.mkdir()
    (code / package / "__init__.py").write_text("")
    (code / package / "jobs.py").write_text(JOBS_SOURCE.format(marks=str(marks)))
    monkeypatch.syspath_prepend(str(code))
    yield Planted(package, code, marks)
    for name in (package, f"{package}.jobs"):
        sys.modules.pop(name, None)


def _evil(planted: Planted) -> dict[str, tuple[dict[str, Any], str]]:
    """Refused targets: their arguments (what an attacker would pass) and why they are refused."""
    command = {"command": f"touch {planted.marks / 'system'}"}
    system_module = os.system.__module__
    join_module = os.path.join.__module__
    return {
        "os.system": (command, "os is a module ('os'), and attribute paths through modules are refused"),
        "os.path.join": ({}, "os is a module ('os'), and attribute paths through modules are refused"),
        "system": (command, f"resolves to system, a builtin function defined in module {system_module!r}"),
        "join": ({"a": "x"}, f"resolves to join, a function defined in module {join_module!r}"),
        "Path": ({}, "resolves to Path, a class defined in module 'pathlib'"),
        "touch": ({}, "resolves to touch, a functools.partial object defined in module 'functools'"),
    }


EVIL = ["os.system", "os.path.join", "system", "join", "Path", "touch"]
# Target attribute paths and the mark each one leaves.
LEGIT = {"run": "run", "arun": "arun", "Jobs.static": "static", "Jobs.klass": "klass", "instance": "instance"}


def _is_refused(error: str, planted: Planted, path: str, where: str) -> bool:
    _, why = _evil(planted)[path]
    return f"target '{planted.target(path)}'" in error and why in error and f"{where} ({planted.package})" in error


# -- adding a schedule ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", EVIL)
def test_local_validate_target_refuses_what_the_attribute_path_reaches(planted: Planted, path: str) -> None:
    executor = LocalExecutor(allowed_modules=[planted.package])
    arguments, _ = _evil(planted)[path]

    with pytest.raises(ExecutorError) as caught:
        executor.validate_target(planted.target(path), arguments)

    assert _is_refused(str(caught.value), planted, path, "[executor.local] allowed_modules"), caught.value
    assert planted.left() == []


def test_the_error_says_plainly_why(planted: Planted) -> None:
    executor = LocalExecutor(allowed_modules=[planted.package])

    with pytest.raises(ExecutorError) as through_module:
        executor.validate_target(planted.target("os.system"), {"command": "true"})
    with pytest.raises(ExecutorError) as defined_elsewhere:
        executor.validate_target(planted.target("system"), {"command": "true"})

    assert str(through_module.value) == (
        f"target '{planted.jobs}:os.system' is refused: os is a module ('os'), and attribute paths through "
        f"modules are refused under [executor.local] allowed_modules ({planted.package}); name the module "
        "before the ':'; it is not run"
    )
    assert str(defined_elsewhere.value) == (
        f"target '{planted.jobs}:system' resolves to system, a builtin function defined in module "
        f"{os.system.__module__!r}, which is not in [executor.local] allowed_modules ({planted.package}); "
        "it is not run"
    )


@pytest.mark.parametrize("path", sorted(LEGIT))
def test_functions_classes_methods_and_instances_of_the_allowed_module_are_accepted(
    planted: Planted, path: str
) -> None:
    LocalExecutor(allowed_modules=[planted.package]).validate_target(planted.target(path), {})
    JobQueueExecutor(
        f"sqlite:///{planted.marks.parent / 'queue.db'}", allowed_modules=[planted.package]
    ).validate_target(planted.target(path), {})


@pytest.mark.parametrize("path", ["os.system", "system", "touch"])
def test_jobqueue_validate_target_refuses_them_too(planted: Planted, path: str) -> None:
    executor = JobQueueExecutor(f"sqlite:///{planted.marks.parent / 'queue.db'}", allowed_modules=[planted.package])
    arguments, _ = _evil(planted)[path]

    with pytest.raises(ExecutorError) as caught:
        executor.validate_target(planted.target(path), arguments)

    assert _is_refused(str(caught.value), planted, path, "[executor.jobqueue] allowed_modules"), caught.value


def test_admin_add_refuses_them(planted: Planted, tmp_path: Path) -> None:
    with tickwork.connect(str(allowed_modules_config(tmp_path, planted.package))) as admin:
        for path in EVIL:
            arguments, _ = _evil(planted)[path]
            with pytest.raises(ExecutorError) as caught:
                admin.add(f"evil-{path}", "@hourly", planted.target(path), args=arguments)
            assert _is_refused(str(caught.value), planted, path, "[executor.local] allowed_modules"), caught.value
        admin.add("fine", "@hourly", planted.target("run"))

        assert [s.spec.name for s in admin.list()] == ["fine"]
    assert planted.left() == []


def test_the_jobs_add_command_refuses_them(planted: Planted, tmp_path: Path) -> None:
    config = str(allowed_modules_config(tmp_path, planted.package))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(planted.code), os.environ.get("PYTHONPATH", "")])}
    env.pop("TICKWORK_CONFIG", None)

    def jobs_add(name: str, path: str, arguments: str) -> subprocess.CompletedProcess[str]:
        command = ["jobs", "add", "--config", config, name, "@hourly", planted.target(path), "--args", arguments]
        return subprocess.run(
            [sys.executable, "-m", "tickwork.cli", *command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )

    refused = jobs_add("evil", "os.system", f'{{"command": "touch {planted.marks / "system"}"}}')
    added = jobs_add("fine", "run", "{}")

    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith("tickwork: error: ")
    assert _is_refused(refused.stderr, planted, "os.system", "[executor.local] allowed_modules"), refused.stderr
    assert added.returncode == 0, added.stderr
    assert planted.left() == []


# -- the local executor at run time -----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_local_refuses_them_at_run_time(planted: Planted, mode: str) -> None:
    executor = LocalExecutor(allowed_modules=[planted.package], mode=mode)
    executor.start()
    try:
        outcomes = Outcomes()
        for run_id, path in enumerate(EVIL, start=1):
            arguments, _ = _evil(planted)[path]
            executor.submit(call(run_id, path, planted.target(path), **arguments), outcomes)
        got = outcomes.wait(len(EVIL))
    finally:
        executor.shutdown()

    assert {o.status for o in got} == {RunStatus.FAILED}
    for path in EVIL:
        assert any(o.error and _is_refused(o.error, planted, path, "[executor.local] allowed_modules") for o in got)
    assert planted.left() == []


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_local_runs_the_allowed_module_s_own_callables(planted: Planted, mode: str) -> None:
    executor = LocalExecutor(allowed_modules=[planted.package], mode=mode)
    executor.start()
    try:
        for run_id, path in enumerate(LEGIT, start=1):
            recorder = Recorder()
            executor.submit(call(run_id, path, planted.target(path)), recorder)
            outcome = recorder.wait()
            assert outcome.status is RunStatus.SUCCEEDED, (path, outcome.error)
    finally:
        executor.shutdown()

    assert planted.left() == sorted(LEGIT.values())


def test_a_planted_schedule_row_is_refused_and_recorded_failed(planted: Planted, tmp_path: Path) -> None:
    config = str(allowed_modules_config(tmp_path, planted.package))
    node = Node(load(config))
    node.open()
    try:
        # What anyone with write access to the database can do, bypassing every tickwork check.
        spec = ScheduleSpec(
            name="planted",
            trigger_kind="interval",
            expression="1h",
            target=planted.target("os.system"),
            arguments={"command": f"touch {planted.marks / 'system'}"},
        )
        node.store.add(spec, node.store.now() - timedelta(seconds=1))
        node.engine.tick()
    finally:
        node.shutdown()
    with tickwork.connect(config) as admin:
        [run] = admin.history()

    assert run.status is RunStatus.FAILED
    assert run.error is not None
    assert _is_refused(run.error, planted, "os.system", "[executor.local] allowed_modules"), run.error
    assert planted.left() == []


# -- the jobqueue worker ----------------------------------------------------------------------------


def _enqueue_unchecked(queue: str, planted: Planted, paths: list[str]) -> None:
    """Enqueue like a scheduler without an allow-list (or anyone writing the queue table)."""
    executor = JobQueueExecutor(queue, import_targets=False)
    executor.start()
    try:
        outcomes = Outcomes()
        for run_id, path in enumerate(paths, start=1):
            arguments = _evil(planted)[path][0] if path in EVIL else {}
            executor.submit(call(run_id, path, planted.target(path), **arguments), outcomes)
        assert {o.status for o in outcomes.wait(len(paths))} == {RunStatus.SUCCEEDED}
    finally:
        executor.shutdown()


def test_a_worker_refuses_planted_rows_and_runs_the_legit_ones(planted: Planted, tmp_path: Path) -> None:
    queue = f"sqlite:///{tmp_path / 'queue.db'}"
    _enqueue_unchecked(queue, planted, [*EVIL, *LEGIT])

    worker = Worker(queue, allowed_modules=[f"{planted.package}."])
    try:
        worker.run(once=True)
    finally:
        worker.close()

    states = {row["schedule"]: (row["state"], row["error"]) for row in rows(queue)}
    for path in EVIL:
        state, error = states[path]
        assert state == "failed" and _is_refused(error, planted, path, "--allowed-modules"), (path, error)
    assert {path: states[path] for path in LEGIT} == {path: ("done", None) for path in LEGIT}
    assert planted.left() == sorted(LEGIT.values())


def test_the_worker_command_refuses_a_planted_row(planted: Planted, tmp_path: Path) -> None:
    queue = f"sqlite:///{tmp_path / 'queue.db'}"
    _enqueue_unchecked(queue, planted, ["os.system"])

    ran = run_worker("--url", queue, "--once", "--allowed-modules", planted.package, PYTHONPATH=str(planted.code))

    assert ran.returncode == 0, ran.stderr
    [row] = rows(queue)
    assert row["state"] == "failed"
    assert _is_refused(row["error"], planted, "os.system", "--allowed-modules"), row["error"]
    assert planted.left() == []
