"""The stores of the tests: every backend x claim strategy as pytest params, a migrated open store of
one kind (``make_store``), the fake clock's start ``T0`` and a settable monotonic clock (``Ticker``).
The fixtures built on them are in tests/conftest.py."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support import planted
from tickwork.abc import Store
from tickwork.testing import MemoryStore
from tickwork_mysql.store import MySQLStore
from tickwork_postgres.store import PostgresStore
from tickwork_sqlite.store import SQLiteStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Ticker:
    """A settable monotonic clock (seconds), for engines whose waits a test steps by hand."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


STORE_PARAMS = [
    *(pytest.param(("sqlite", c), id=f"sqlite-{c}") for c in SQLiteStore.claim_strategies),
    *(pytest.param(("postgres", c), id=f"postgres-{c}") for c in PostgresStore.claim_strategies),
    *(pytest.param(("mysql", c), id=f"mysql-{c}") for c in MySQLStore.claim_strategies),
]


#: Every store the contract runs on: the in-memory specification first, then each SQL store x
#: claim strategy (the SQL ones are also the stores the multi-process tests share).
CONTRACT_PARAMS = [pytest.param(("memory", "lock"), id="memory-lock"), *STORE_PARAMS]


def make_store(kind: str, claim: str, request: pytest.FixtureRequest, tmp_path: Path, **kw: object) -> Store:
    """A migrated, open store of ``kind``: the SQL ones on a copy of the session's migrated
    template database (``sqlite_template``, ``postgres_migrated_url``, ``mysql_migrated_url``);
    the migrations themselves are tested on empty databases (tests/sql/test_migrations.py)."""
    store: Store
    if kind == "memory":
        store = MemoryStore(claim=claim, **kw)  # type: ignore[arg-type]
        store.upgrade()
    elif kind == "sqlite":
        path = tmp_path / "tickwork.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        store = SQLiteStore(str(path), claim=claim, **kw)  # type: ignore[arg-type]
    elif kind == "mysql":
        store = MySQLStore(request.getfixturevalue("mysql_migrated_url"), claim=claim, **kw)  # type: ignore[arg-type]
    else:
        url = planted.with_password(request.getfixturevalue("postgres_migrated_url"))
        store = PostgresStore(url, claim=claim, **kw)  # type: ignore[arg-type]
    store.open()
    return store
