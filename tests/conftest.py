"""Shared fixtures: a fake clock and store factories parametrized over every backend and claim
strategy, so the contract suite runs against all of them (APScheduler's pattern)."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Generator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests import planted
from tickwork.abc import Store
from tickwork.sql.store import SQLStore
from tickwork.testing import FakeClock, MemoryStore
from tickwork_mysql.store import MySQLStore
from tickwork_postgres.store import PostgresStore
from tickwork_sqlite.store import SQLiteStore

pytest_plugins = [
    "tests.servers.postgres",
    "tests.servers.mysql",
    "tests.servers.configs",
    "tests.servers.redis",
    "tests.servers.rabbitmq",
]

T0 = datetime(2026, 1, 1, tzinfo=UTC)


__all__ = ["T0", "FakeClock"]


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
def sqlite_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding the default configuration's SQLite database, migrated: what
    `tickwork db upgrade` leaves in an empty directory (``tickwork.connect()`` opens it)."""
    from tickwork.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TICKWORK_CONFIG", raising=False)
    assert main(["db", "upgrade"]) == 0
    return tmp_path


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


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database file holding tickwork's schema at head, migrated once a session; tests
    copy it (``make_store``, ``config_for(migrated=True)``) rather than run the migrations again."""
    path = tmp_path_factory.mktemp("sqlite-template") / "tickwork.db"
    store = SQLiteStore(str(path))
    store.upgrade()
    store.close()
    return path


def make_store(kind: str, claim: str, request: pytest.FixtureRequest, tmp_path: Path, **kw: object) -> Store:
    """A migrated, open store of ``kind``: the SQL ones on a copy of the session's migrated
    template database (the migrations are tested on empty ones in test_migrations.py)."""
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


# -- planted secrets: no log line or output of the HTTP, store and jobqueue tests may show one --------

_LOG_LINES = pytest.StashKey[list[str]]()


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture(autouse=True)
def _collect_every_log_line(request: pytest.FixtureRequest) -> Iterator[None]:
    """In the guarded modules, record every log line at DEBUG for the check in the report hook."""
    if request.node.path.name not in planted.GUARDED:
        yield
        return
    root, statements = logging.getLogger(), logging.getLogger("sqlalchemy")
    handler, levels = _Collect(), (root.level, statements.level)
    root.addHandler(handler)
    # SQL statements at INFO would only slow the store suite down; they carry no URL.
    root.setLevel(logging.DEBUG)
    statements.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(levels[0])
        statements.setLevel(levels[1])
        request.node.stash[_LOG_LINES] = handler.lines


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, object, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if report.when != "teardown" or item.path.name not in planted.GUARDED:
        return
    # The sections hold the captured stdout, stderr and log of every phase so far.
    texts = [*item.stash.get(_LOG_LINES, []), *(content for _, content in report.sections)]
    found = planted.leaks(texts)
    if found and report.outcome != "failed":
        shown = "\n".join(
            line.replace(planted.PASSWORD, "<PASSWORD>").replace(planted.TOKEN, "<TOKEN>") for line in found
        )
        report.outcome = "failed"
        report.longrepr = f"a planted secret appeared in {len(found)} captured line(s):\n{shown}"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked ``slow`` (real clusters, brokers, minute-long waits) first: run last, one
    of them alone on a worker is the suite's tail while the other workers sit idle. Otherwise
    the collected order is kept."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
