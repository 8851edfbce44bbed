"""``config_for``: a tickwork configuration for any backend on a fresh database, a pytest plugin.

``config_for(backend, migrated=False)`` (``backend`` one of :data:`BACKENDS`) returns a
:class:`StoreConfig`: the ``[store]`` table of a fresh SQLite file in the test's ``tmp_path``, or of
a fresh database on the session's PostgreSQL / MySQL server (dropped after the test), as a dict
(:meth:`StoreConfig.as_dict`, what ``tickwork.connect`` and ``Node.from_config`` take) or as TOML
(:meth:`StoreConfig.toml`, for a ``tickwork.toml``). ``migrated=True`` gives a database that holds
the schema already: a copy of the session's migrated template (``tests/servers/base.py``).
Each call is a new database, so one test can hold several.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from tests.support.servers.mysql import MYSQL, MySQLServer
from tests.support.servers.postgres import POSTGRES, PostgresServer
from tickwork.abc import Store
from tickwork_mysql.store import MySQLStore
from tickwork_postgres.store import PostgresStore
from tickwork_sqlite.store import SQLiteStore

__all__ = ["BACKENDS", "ConfigFor", "StoreConfig", "config_for"]

BACKENDS = ("sqlite", "postgres", "mysql")


@dataclass(frozen=True)
class StoreConfig:
    """One backend's ``[store]`` table (``plugin`` included) on its own database."""

    backend: str
    store: dict[str, str]

    def as_dict(self, **tables: Any) -> dict[str, Any]:
        """A configuration dict: the other ``tables`` (``scheduler={...}``, ...) and this store."""
        return {**tables, "store": dict(self.store)}

    def toml(self) -> str:
        """The ``[store]`` table as TOML text."""
        # A JSON string is a valid TOML basic string (same escapes), whatever the path or URL holds.
        return "[store]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in self.store.items())

    def build_store(self, **kw: Any) -> Store:
        """The store this configuration names (not opened), with extra constructor arguments."""
        options = {k: v for k, v in self.store.items() if k != "plugin"}
        kind = {"sqlite": SQLiteStore, "postgres": PostgresStore, "mysql": MySQLStore}[self.backend]
        store: Store = kind(**options, **kw)
        return store


class ConfigFor(Protocol):
    def __call__(self, backend: str, *, migrated: bool = False) -> StoreConfig: ...


@pytest.fixture
def config_for(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ConfigFor]:
    """Make :class:`StoreConfig` s of fresh databases, dropped when the test ends."""
    numbers = itertools.count(1)
    with contextlib.ExitStack() as databases:

        def make(backend: str, *, migrated: bool = False) -> StoreConfig:
            if backend == "sqlite":
                store = {"plugin": "sqlite", "path": str(tmp_path / f"tickwork-{next(numbers)}.db")}
                if migrated:
                    shutil.copyfile(request.getfixturevalue("sqlite_template"), store["path"])
            elif backend == "postgres":
                pg: PostgresServer = request.getfixturevalue("postgres_server")
                made = POSTGRES.migrated_database(pg) if migrated else POSTGRES.fresh_database(pg)
                store = {"plugin": "postgres", "url": pg.url(databases.enter_context(made))}
            elif backend == "mysql":
                my: MySQLServer = request.getfixturevalue("mysql_server")
                made = MYSQL.migrated_database(my) if migrated else MYSQL.fresh_database(my)
                store = {"plugin": "mysql", "url": my.url(databases.enter_context(made))}
            else:
                raise ValueError(f"no backend {backend!r}; one of {', '.join(BACKENDS)}")
            # migrated: a copy of the session's migrated template (tests/servers/base.py).
            return StoreConfig(backend, store)

        yield make
