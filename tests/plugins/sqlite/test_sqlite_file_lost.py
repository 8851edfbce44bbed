"""A SQLite file deleted or replaced under a running node (issue 31): its open connection went on
writing into the unlinked file, lost to everyone, without a word. The store now checks, before
each transaction, that the path still names the file it opened; if not, it logs one ERROR naming
the path and what to do, and refuses every transaction (a store fault: the node is unhealthy,
claims nothing, and stops cleanly). Embedded nodes on a tmp_path file."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

import tickwork
from tickwork.errors import StoreError
from tickwork.node import Node

RECORD = "tests.support.jobs_for_tests:record"


def node_on(path: Path, node_id: str = "file-lost") -> Node:
    return Node.from_config({"store": {"path": str(path)}}, node_id=node_id, max_sleep=0.1)


def test_a_deleted_file_is_a_store_fault_named_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="tickwork.sqlite")
    db = tmp_path / "t.db"
    with node_on(db) as node:
        assert node.health() == (True, "ok")
        for part in tmp_path.glob("t.db*"):  # the file and its -wal and -shm, as `rm t.db*` does
            part.unlink()
        healthy, reason = node.health()
        assert not healthy and "was deleted" in reason and str(db) in reason, reason
        with pytest.raises(StoreError, match="was deleted"):
            node.store.now()
        assert not db.exists()  # nothing writes there behind the operator's back
    errors = [r.getMessage() for r in caplog.records if r.name == "tickwork.sqlite" and r.levelno == logging.ERROR]
    assert len(errors) == 1, errors  # once, however many transactions were refused
    assert str(db) in errors[0] and "was deleted" in errors[0] and "restart" in errors[0]
    # What the message says to do: start the node again (here on a fresh, empty file).
    with node_on(db) as again:
        assert again.health() == (True, "ok")


def test_a_replaced_file_is_a_store_fault(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    with node_on(db) as node:
        node.admin.add("before", "0 3 * * *", RECORD)
        node.admin.close()
        # A restore: a copy moved into place (a new inode at the same path).
        shutil.copy(db, tmp_path / "restored.db")
        (tmp_path / "restored.db").replace(db)
        healthy, reason = node.health()
        assert not healthy and "was replaced" in reason, reason
    # The new file is whole and a new node uses it.
    with node_on(db, "after-restore") as node, tickwork.connect({"store": {"path": str(db)}}) as admin:
        assert node.health() == (True, "ok")
        assert [s.name for s in admin.list()] == ["before"]


def test_an_untouched_file_stays_healthy_across_restarts(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    for _ in range(2):
        with node_on(db) as node:
            node.admin.add(f"s{node.instance}", "0 3 * * *", RECORD)
            assert node.health() == (True, "ok")


def test_a_relative_path_survives_a_change_of_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with node_on(Path("relative.db")) as node:
        (tmp_path / "elsewhere").mkdir()
        monkeypatch.chdir(tmp_path / "elsewhere")  # an application may; SQLite holds the file open
        assert node.health() == (True, "ok")
