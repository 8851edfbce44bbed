"""Tests of the MySQL / MariaDB test-server plumbing in tests/mysqlserver.py."""

from __future__ import annotations

import contextlib
import os

import pytest

from tests.mysqlserver import (
    ENV_MODE,
    ENV_URL,
    MySQLServer,
    MySQLUnavailable,
    fresh_database,
    select_server,
)
from tickwork_mysql.store import MySQLStore


def _databases(server: MySQLServer) -> set[str]:
    with contextlib.closing(server.connect()) as conn, conn.cursor() as cur:
        cur.execute("SHOW DATABASES")
        return {row[0] for row in cur.fetchall()}


def test_mysql_url_is_a_fresh_database_the_store_migrates_and_opens(mysql_url: str) -> None:
    store = MySQLStore(mysql_url)
    store.upgrade()
    store.open()
    try:
        assert store.list_schedules() == []
    finally:
        store.close()


def test_fresh_databases_are_distinct_and_dropped(mysql_server: MySQLServer) -> None:
    with fresh_database(mysql_server) as first, fresh_database(mysql_server) as second:
        assert first != second and {first, second} <= _databases(mysql_server)
    assert not {first, second} & _databases(mysql_server)


def test_throwaway_mariadb_starts_serves_and_leaves_nothing_behind() -> None:
    server = select_server({ENV_MODE: "throwaway"})
    assert server.throwaway is not None and server.source == "throwaway"
    base_dir = server.throwaway.base_dir
    assert base_dir is not None and base_dir.is_dir()
    try:
        if os.geteuid() == 0:  # it runs as the unprivileged service user, not as root
            assert base_dir.stat().st_uid != 0
        with fresh_database(server) as dbname:
            store = MySQLStore(server.url(dbname))
            store.upgrade()
            store.open()
            assert store.now().tzinfo is not None
            store.close()
    finally:
        server.throwaway.stop()
    assert not base_dir.exists()


def test_an_unreachable_server_is_named_not_skipped() -> None:
    with pytest.raises(MySQLUnavailable, match=r"points at root@127\.0\.0\.1:1, which refused"):
        select_server({ENV_URL: "mysql://root@127.0.0.1:1/x"})
    with pytest.raises(MySQLUnavailable, match="is not one of"):
        select_server({ENV_MODE: "sometimes"})
