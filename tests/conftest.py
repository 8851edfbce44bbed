"""Shared fixtures: a fake clock and store factories parametrized over every backend and claim
strategy, so the contract suite runs against all of them (APScheduler's pattern)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tickwork.abc import Store
from tickwork.sql.store import SQLStore
from tickwork.testing import FakeClock, MemoryStore
from tickwork_mysql.store import MySQLStore
from tickwork_postgres.store import PostgresStore
from tickwork_sqlite.store import SQLiteStore

pytest_plugins = ["tests.pgserver", "tests.mysqlserver"]

T0 = datetime(2026, 1, 1, tzinfo=UTC)


__all__ = ["T0", "FakeClock"]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


STORE_PARAMS = [
    *(pytest.param(("sqlite", c), id=f"sqlite-{c}") for c in SQLiteStore.claim_strategies),
    *(pytest.param(("postgres", c), id=f"postgres-{c}") for c in PostgresStore.claim_strategies),
    *(pytest.param(("mysql", c), id=f"mysql-{c}") for c in MySQLStore.claim_strategies),
]


#: Every store the contract runs on: the in-memory specification first, then each SQL store x
#: claim strategy (the SQL ones are also the stores the multi-process tests share).
CONTRACT_PARAMS = [pytest.param(("memory", "lock"), id="memory-lock"), *STORE_PARAMS]


def make_store(kind: str, claim: str, request: pytest.FixtureRequest, tmp_path: Path, **kw: object) -> Store:
    store: Store
    if kind == "memory":
        store = MemoryStore(claim=claim, **kw)  # type: ignore[arg-type]
    elif kind == "sqlite":
        store = SQLiteStore(str(tmp_path / "tickwork.db"), claim=claim, **kw)  # type: ignore[arg-type]
    elif kind == "mysql":
        store = MySQLStore(request.getfixturevalue("mysql_url"), claim=claim, **kw)  # type: ignore[arg-type]
    else:
        url = request.getfixturevalue("postgres_url")
        store = PostgresStore(url, claim=claim, **kw)  # type: ignore[arg-type]
    store.upgrade()
    store.open()
    return store


@pytest.fixture(params=CONTRACT_PARAMS)
def store_kind(request: pytest.FixtureRequest) -> tuple[str, str]:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def store(
    store_kind: tuple[str, str], request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> Iterator[Store]:
    """A migrated, open store on a fake clock (its public ``clock`` seam), for each backend x
    claim strategy."""
    s = make_store(*store_kind, request, tmp_path, clock=clock)
    yield s
    s.close()


@pytest.fixture
def sqlite_store(tmp_path: Path, clock: FakeClock) -> Iterator[SQLStore]:
    s = SQLiteStore(str(tmp_path / "tickwork.db"), clock=clock)
    s.upgrade()
    s.open()
    yield s
    s.close()


@pytest.fixture(params=CONTRACT_PARAMS)
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    """A callable returning a fresh, migrated, open store of one kind x claim strategy on its
    own real clock (the contract's ``make_store``)."""
    kind, claim = request.param
    return lambda: make_store(kind, claim, request, tmp_path)
