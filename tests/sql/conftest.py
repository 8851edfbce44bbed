"""Fixtures of the sql tests: ``url``, an empty database of every kind (the migrations' tests);
``server_store``, a migrated store on each database server with row locks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.stores import make_store
from tickwork.sql.store import SQLStore
from tickwork_mysql.store import sqlalchemy_url


@pytest.fixture(params=["sqlite", "postgres", "mysql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'm.db'}"
    if request.param == "mysql":
        return sqlalchemy_url(request.getfixturevalue("mysql_url"))
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture(params=["postgres", "mysql"])
def server_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SQLStore]:
    """A migrated, open ``skip-locked`` store on PostgreSQL and on MySQL/MariaDB."""
    store = make_store(request.param, "skip-locked", request, tmp_path)
    assert isinstance(store, SQLStore)
    yield store
    store.close()
