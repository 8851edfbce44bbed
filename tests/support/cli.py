"""The command line run in-process (``tickwork.cli.main``) as the CLI tests drive it: ``tw`` runs
``tickwork ARGS...`` and returns its exit code and output, ``workdir`` puts each test in an empty
directory, ``jobs_module`` is an importable job module of a unique name."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tickwork.cli import main
from tickwork.config import load
from tickwork.node import Node
from tickwork.structures import Schedule
from tickwork_sqlite.store import SQLiteStore

# A job module with a unique name (declared jobs are registered per module name for the process).
JOBS_MODULE = f"cli_test_jobs_{uuid.uuid4().hex[:8]}"


JOBS_SOURCE = """
import tickwork

CALLS: list[str] = []


def ok() -> None:
    CALLS.append("ok")


def boom() -> None:
    raise RuntimeError("boom from job")


def needs(region: str) -> None:
    CALLS.append(region)


@tickwork.cron("0 0 1 1 *", name="declared-yearly")
def yearly() -> None:
    CALLS.append("yearly")
"""


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


Tickwork = Callable[..., Result]


@pytest.fixture(scope="module")
def jobs_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("jobs")
    (folder / f"{JOBS_MODULE}.py").write_text(JOBS_SOURCE, encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(folder))
        yield JOBS_MODULE
    sys.modules.pop(JOBS_MODULE, None)


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test in an empty directory without $TICKWORK_CONFIG: the defaults (./tickwork.db) apply."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TICKWORK_CONFIG", raising=False)
    return tmp_path


@pytest.fixture
def tw(capsys: pytest.CaptureFixture[str]) -> Tickwork:
    """Run ``tickwork ARGS...``; user errors must never show a traceback."""

    def run(*args: str) -> Result:
        code = main(list(args))
        out, err = capsys.readouterr()
        assert "Traceback" not in err, err
        return Result(code, out, err)

    return run


def error_of(result: Result, code: int) -> str:
    """Check ``result`` failed with ``code`` and a one-line ``tickwork: error:`` on stderr; return it."""
    assert result.code == code, result
    assert result.out == ""
    assert result.err.startswith("tickwork: error: "), result.err
    return result.err


def write_config(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def stored(name: str, path: str = "tickwork.db") -> Schedule:
    store = SQLiteStore(path)
    store.open()
    try:
        return store.get(name)
    finally:
        store.close()


def run_due_once(config: str | None = None) -> Node:
    """Start a node in-process, claim and run what is due now, and shut it down (waits for the runs)."""
    node = Node(load(config))
    node.open()
    try:
        node.engine.tick()
    finally:
        node.shutdown()
    return node
