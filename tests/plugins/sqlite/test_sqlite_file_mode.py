"""New SQLite files (the store's and a jobqueue's, with their -wal and -shm) are private: mode 0600."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.jobqueue_helpers import Outcomes, call
from tickwork.structures import RunStatus, ScheduleSpec
from tickwork_jobqueue.executor import JobQueueExecutor
from tickwork_sqlite.store import SQLiteStore


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    """umask 000: left to itself SQLite would create 0644 files, so 0600 is tickwork's doing."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def test_a_new_store_file_and_its_wal_and_shm_are_owner_only(tmp_path: Path, permissive_umask: None) -> None:
    path = tmp_path / "tickwork.db"
    store = SQLiteStore(str(path))
    store.open()
    try:
        store.add(ScheduleSpec(name="a", trigger_kind="interval", expression="1h", target="m:f"), store.now())
        files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
        assert all(f.exists() for f in files)  # WAL mode, connection open: all three are there
        assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
    finally:
        store.close()


def test_an_existing_store_file_keeps_the_mode_its_owner_chose(tmp_path: Path, permissive_umask: None) -> None:
    path = tmp_path / "shared.db"
    path.touch(mode=0o640)
    store = SQLiteStore(str(path))
    store.open()
    store.close()
    assert mode(path) == 0o640


def test_a_new_sqlite_queue_file_is_owner_only(tmp_path: Path, permissive_umask: None) -> None:
    path = tmp_path / "queue.db"
    executor = JobQueueExecutor(f"sqlite:///{path}")
    executor.start()
    try:
        outcomes = Outcomes()
        executor.submit(call(1, "job", "m:f"), outcomes)
        [outcome] = outcomes.wait()
        assert outcome.status is RunStatus.SUCCEEDED
        files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
        assert {f.name: mode(f) for f in files if f.exists()} == {f.name: 0o600 for f in files}
    finally:
        executor.shutdown()
