"""Shared fixtures: a fake clock and one store fixture parametrized over every backend and claim
strategy, so the contract suite runs against all of them (APScheduler's pattern)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tickwork.sql.store import SQLStore
from tickwork_postgres.store import PostgresStore
from tickwork_sqlite.store import SQLiteStore

pytest_plugins = ["tests.pgserver"]

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class FakeClock:
    """A settable clock standing in for the database clock in engine and store tests."""

    def __init__(self, start: datetime = T0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now

    def set(self, value: datetime) -> None:
        with self._lock:
            self._now = value


class Ticker:
    """A settable monotonic clock (seconds), for engines whose waits a test steps by hand."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


STORE_PARAMS = [
    *(pytest.param(("sqlite", c), id=f"sqlite-{c}") for c in SQLiteStore.claim_strategies),
    *(pytest.param(("postgres", c), id=f"postgres-{c}") for c in PostgresStore.claim_strategies),
]


def make_store(kind: str, claim: str, request: pytest.FixtureRequest, tmp_path: Path, **kw: object) -> SQLStore:
    store: SQLStore
    if kind == "sqlite":
        store = SQLiteStore(str(tmp_path / "tickwork.db"), claim=claim, **kw)  # type: ignore[arg-type]
    else:
        url = request.getfixturevalue("postgres_url")
        store = PostgresStore(url, claim=claim, **kw)  # type: ignore[arg-type]
    store.upgrade()
    store.open()
    return store


@pytest.fixture(params=STORE_PARAMS)
def store_kind(request: pytest.FixtureRequest) -> tuple[str, str]:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def store(
    store_kind: tuple[str, str], request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> Iterator[SQLStore]:
    """A migrated, open store on a fake clock, for each backend x claim strategy."""
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
