"""Fixtures of the sql tests: ``url``, an empty database of every kind (the migrations' tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tickwork_mysql.store import sqlalchemy_url


@pytest.fixture(params=["sqlite", "postgres", "mysql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'm.db'}"
    if request.param == "mysql":
        return sqlalchemy_url(request.getfixturevalue("mysql_url"))
    return str(request.getfixturevalue("postgres_url"))
