"""tickwork's store fixtures and ``StoreContract`` on pytest-postgresql's fixtures, through
``tickwork.testing.postgresql`` (docs/testing.md#pytest-postgresql), as its user writes them.

``postgresql_noproc`` is pytest-postgresql's factory pointed at the suite's server (the running one,
or the throwaway one the suite starts: ``depends_on`` a fixture that describes it);
``postgresql`` gives each test an empty database made from its template. ``postgresql_proc`` (a
server pytest-postgresql starts with ``pg_ctl``) is not run here: PostgreSQL refuses to start as
root, which CI is, and pytest-postgresql cannot switch user; its executor has the attributes the
adapter reads (host, port, user, password, unixsocketdir), tested with :class:`tickwork.testing.postgresql.Place`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import quote

import psycopg
import pytest
from pytest_postgresql import factories
from sqlalchemy.engine import make_url

from tests.support.servers.postgres import PostgresServer
from tickwork.abc import Store
from tickwork.sql.claims import STRATEGIES
from tickwork.sql.migrations import VERSION_TABLE, head_revision
from tickwork.sql.schema import schedules
from tickwork.structures import ScheduleSpec
from tickwork.testing import StoreContract
from tickwork.testing.postgresql import Place, load_schema, postgres_store, postgres_url, store_fixture, store_maker
from tickwork_postgres.store import sqlalchemy_url

#: This process's own names: several sessions share the server (a worker's id is appended under xdist).
DBNAME = f"tickwork_pgfix_{os.getpid()}"


@dataclass(frozen=True)
class SuiteServer:
    """The suite's PostgreSQL server as pytest-postgresql reads the fixture its ``depends_on`` names."""

    host: str
    port: int
    user: str
    password: str | None
    maintenance_dbname: str
    options: str = ""
    template_dbname: str | None = None


@pytest.fixture(scope="session")
def suite_postgres(postgres_server: PostgresServer) -> SuiteServer:
    return SuiteServer(
        postgres_server.host,
        postgres_server.port,
        postgres_server.user,
        postgres_server.password,
        postgres_server.maintenance_dbname,
    )


# The user's conftest.py: pytest-postgresql's factories, under the names its plugin gives them; the
# template migrated once (load_schema), so each test's copy starts with the schema.
postgresql_noproc = factories.postgresql_noproc(depends_on="suite_postgres", dbname=DBNAME, load=[load_schema])
postgresql = factories.postgresql("postgresql_noproc")
tickwork_store = store_fixture("postgresql")

# Without load_schema: each test's database is empty, and the store migrates it.
bare_noproc = factories.postgresql_noproc(depends_on="suite_postgres", dbname=f"{DBNAME}_bare")
bare_postgresql = factories.postgresql("bare_noproc")
bare_store = store_fixture("bare_postgresql")


class TestStoreContractOnPytestPostgresql(StoreContract):
    """The whole contract, each test on the empty database pytest-postgresql made for it."""

    @pytest.fixture
    def make_store(self, postgresql: psycopg.Connection[tuple[object, ...]]) -> object:
        return store_maker(postgresql)


def test_the_store_fixture_works_in_the_test_database(
    tickwork_store: Store, postgresql: psycopg.Connection[tuple[object, ...]]
) -> None:
    tickwork_store.add(ScheduleSpec("nightly", "cron", "0 3 * * *", "app.jobs:nightly"), tickwork_store.now())
    # Read back over pytest-postgresql's own connection: the schema was migrated into its database.
    with postgresql.cursor() as cursor:
        cursor.execute(f"SELECT name FROM {schedules.name}")
        assert cursor.fetchall() == [("nightly",)]
    assert postgresql.info.dbname.startswith(DBNAME)


def test_the_template_is_migrated_once_and_each_test_starts_with_the_schema(
    postgresql: psycopg.Connection[tuple[object, ...]],
) -> None:
    # Read before any store was made: the copy of the template already holds the schema, empty.
    with postgresql.cursor() as cursor:
        cursor.execute(f"SELECT version_num FROM {VERSION_TABLE}")
        assert cursor.fetchall() == [(head_revision(),)]
        cursor.execute(f"SELECT count(*) FROM {schedules.name}")
        assert cursor.fetchall() == [(0,)]


def test_without_load_schema_the_store_migrates_the_empty_database(
    bare_postgresql: psycopg.Connection[tuple[object, ...]],
) -> None:
    with bare_postgresql.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_tables WHERE tablename = %s", (schedules.name,))
        assert cursor.fetchall() == [(0,)]
    store = postgres_store(bare_postgresql)
    try:
        store.add(ScheduleSpec("nightly", "cron", "0 3 * * *", "app.jobs:nightly"), store.now())
        assert [s.spec.name for s in store.list_schedules()] == ["nightly"]
    finally:
        store.close()
    with bare_postgresql.cursor() as cursor:
        cursor.execute(f"SELECT version_num FROM {VERSION_TABLE}")
        assert cursor.fetchall() == [(head_revision(),)]


def test_a_claim_strategy_and_the_process_fixture_name_the_same_database(
    postgresql: psycopg.Connection[tuple[object, ...]], postgresql_noproc: object
) -> None:
    # The executor describes the server; its own dbname is the template, so the test's is named.
    url = postgres_url(postgresql_noproc, dbname=postgresql.info.dbname)
    assert url == postgres_url(postgresql)
    store = postgres_store(postgresql_noproc, dbname=postgresql.info.dbname, claim="unique-fire")
    try:
        assert isinstance(store.strategy, STRATEGIES["unique-fire"])  # type: ignore[attr-defined]
        assert store.list_schedules() == []
    finally:
        store.close()


def test_urls_keep_every_part_as_libpq_reads_it() -> None:
    tcp = Place("127.0.0.1", 5433, "app user", "p@ss:/word", "tests_1", "-c statement_timeout=5000")
    url = postgres_url(tcp)
    assert quote("p@ss:/word", safe="") in url  # escaped: its "@" and "/" do not end the password
    parsed = make_url(sqlalchemy_url(url))  # as the postgres store reads its url
    assert (parsed.username, parsed.password, parsed.host, parsed.port) == ("app user", "p@ss:/word", "127.0.0.1", 5433)
    assert parsed.database == "tests_1"
    assert parsed.query["options"] == "-c statement_timeout=5000"
    # A Unix-socket directory (postgresql_proc's unixsocketdir) is a host libpq takes in the query.
    socket = make_url(postgres_url(Place("/tmp/pg sock", 5432, "postgres", None, "tests")))
    assert (socket.host, socket.password, socket.query["host"]) == (None, None, "/tmp/pg sock")
