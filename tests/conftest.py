"""Shared fixtures: a fake clock and store factories parametrized over every backend and claim
strategy, so the contract suite runs against all of them (APScheduler's pattern)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest

from tests.support import planted
from tests.support.stores import CONTRACT_PARAMS, T0, make_store
from tickwork.abc import Store
from tickwork.sql.store import SQLStore
from tickwork.testing import FakeClock
from tickwork_sqlite.store import SQLiteStore

pytest_plugins = [
    "tests.support.servers.postgres",
    "tests.support.servers.mysql",
    "tests.support.servers.configs",
    "tests.support.servers.redis",
    "tests.support.servers.rabbitmq",
]


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


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database file holding tickwork's schema at head, migrated once a session; tests
    copy it (``make_store``, ``config_for(migrated=True)``) rather than run the migrations again."""
    path = tmp_path_factory.mktemp("sqlite-template") / "tickwork.db"
    store = SQLiteStore(str(path))
    store.upgrade()
    store.close()
    return path


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
