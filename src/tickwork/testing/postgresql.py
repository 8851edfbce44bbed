"""tickwork's PostgreSQL store on pytest-postgresql's fixtures (docs/testing.md#pytest-postgresql).

pytest-postgresql gives each test an empty database of its own: its client fixture (``postgresql``,
or one made with ``factories.postgresql(...)``) is a psycopg connection to it, and its process
fixtures (``postgresql_proc``, ``postgresql_noproc``) say where the server is. The functions here
turn either into a tickwork store URL or a migrated, open store of the ``postgres`` plugin on that
database; :func:`store_fixture` makes a store fixture of them, and :func:`store_maker`
the ``make_store`` of a :class:`~tickwork.testing.StoreContract`.

pytest-postgresql is never imported: the fixtures' values are read through their attributes
(``info`` of a psycopg connection; ``host``, ``port``, ``user``, ``password``, ``dbname`` and
``options`` of an executor), so tickwork does not depend on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from urllib.parse import quote, urlencode

import pytest

from ..abc import Store
from ..plugin.manager import default_manager


class ServerInfo(Protocol):
    """Where a database is: a psycopg ``ConnectionInfo`` (``connection.info``), or a
    pytest-postgresql executor (the value of ``postgresql_proc`` / ``postgresql_noproc``)."""

    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def user(self) -> str: ...
    @property
    def password(self) -> str | None: ...
    @property
    def dbname(self) -> str: ...
    @property
    def options(self) -> str: ...


class Connection(Protocol):
    """A psycopg connection (the value of pytest-postgresql's ``postgresql`` fixture)."""

    @property
    def info(self) -> ServerInfo: ...


def server_info(source: Connection | ServerInfo) -> ServerInfo:
    # A connection carries its database in ``info``; an executor is its own description.
    info = getattr(source, "info", None)
    return info if info is not None else source  # type: ignore[return-value]


def postgres_url(source: Connection | ServerInfo, *, dbname: str | None = None) -> str:
    """The tickwork ``[store] url`` of the database ``source`` is connected to or describes.

    ``dbname`` names another database on the same server: a process fixture's own ``dbname`` is
    the template pytest-postgresql copies for each test, not a test's database. A host that is a
    directory (a Unix socket, as ``postgresql_proc`` may use) goes in the query, as libpq takes it.
    """
    info = server_info(source)
    socket_dir = info.host.startswith("/")
    query: dict[str, str] = {"host": info.host} if socket_dir else {}
    if info.options:
        query["options"] = info.options
    # Every part percent-encoded: a store URL may hold no whitespace (tickwork refuses it), and a
    # password's "@" or "/" must not end it.
    userinfo = quote(info.user, safe="") + (f":{quote(info.password, safe='')}" if info.password else "")
    host = "" if socket_dir else (f"[{info.host}]" if ":" in info.host else info.host)
    database = quote(dbname or info.dbname, safe="")
    query_text = f"?{urlencode(query, quote_via=quote)}" if query else ""
    return f"postgresql://{userinfo}@{host}:{info.port}/{database}{query_text}"


def postgres_store(
    source: Connection | ServerInfo,
    *,
    claim: str | None = None,
    clock: Callable[[], datetime] | None = None,
    dbname: str | None = None,
) -> Store:
    """A migrated, open store of the ``postgres`` plugin on the database of ``source`` (see
    :func:`postgres_url`).

    ``claim`` is the claim strategy (the store's default when ``None``); ``clock`` a fake clock
    (:class:`~tickwork.testing.FakeClock`) the store reads instead of the database's. The caller
    closes it (pytest-postgresql drops the database after the test, and waits for no one).
    """
    # The registered class, as a node builds its store: the core never imports a plugin by name.
    cls = default_manager().stores.get("postgres")
    # Options left out take the store's defaults (None is not a value of a declared setting).
    options = {"claim": claim} if claim is not None else {}
    store = cls(postgres_url(source, dbname=dbname), clock=clock, **options)  # type: ignore[call-arg]
    store.upgrade()
    store.open()
    return store


@dataclass(frozen=True)
class Place:
    """A database described by its parts (a :class:`ServerInfo`): how pytest-postgresql's loaders
    are told theirs (keyword arguments, no object), or any server a test names by hand."""

    host: str
    port: int
    user: str
    password: str | None
    dbname: str
    options: str = ""


def load_schema(
    *, host: str, port: int | str, user: str, dbname: str, password: str | None = None, **_: object
) -> None:
    """A pytest-postgresql ``load`` entry that migrates its template database to tickwork's schema::

        postgresql_noproc = factories.postgresql_noproc(..., load=[load_schema])

    pytest-postgresql copies the template for every test, so each test's database starts with the
    schema and :func:`postgres_store` finds nothing to migrate: the migrations run once a session,
    not once a test (~0.5 s each). Other keyword arguments pytest-postgresql passes (``autocommit``)
    are not needed.
    """
    postgres_store(Place(host, int(port), user, password, dbname)).close()


def store_maker(
    source: Connection | ServerInfo, *, claim: str | None = None, clock: Callable[[], datetime] | None = None
) -> Callable[[], Store]:
    """The ``make_store`` of a :class:`~tickwork.testing.StoreContract` on pytest-postgresql's test
    database: each call returns a migrated, open store on it (the contract makes one per test, so
    the database is empty; the contract closes it)."""
    return lambda: postgres_store(source, claim=claim, clock=clock)


def store_fixture(
    connection_fixture: str = "postgresql", *, claim: str | None = None
) -> Callable[..., Iterator[Store]]:
    """A pytest fixture: a migrated, open ``postgres`` store on the test database of the
    pytest-postgresql client fixture named ``connection_fixture``, closed after the test::

        tickwork_store = store_fixture("postgresql", claim="skip-locked")
    """

    @pytest.fixture
    def tickwork_store(request: pytest.FixtureRequest) -> Iterator[Store]:
        store = postgres_store(request.getfixturevalue(connection_fixture), claim=claim)
        yield store
        store.close()

    return tickwork_store
