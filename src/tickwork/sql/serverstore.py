"""What the stores on a database server share: the URL, the connection pool, the thread that
watches for other processes' changes, and how their common options are checked."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from datetime import datetime
from typing import ClassVar

from sqlalchemy import URL, Engine, create_engine, make_url
from sqlalchemy.pool import NullPool

from ..config.numbers import integer, number
from ..errors import ConfigError
from . import dburl
from .store import SQLStore
from .storecore import COMMON_OPTIONS
from .watch import ChangeWatcher

#: The options of every store on a database server.
SERVER_OPTIONS: dict[str, type | tuple[type, ...]] = {
    **COMMON_OPTIONS,
    "url": str,
    "pool_size": int,
    "lock_timeout": (int, float),
    "statement_timeout": (int, float),
}


#: Seconds the presence connection may take to open (and, on MySQL, a statement of it to answer).
#: Its own thread waits for it, never the heartbeat (:mod:`tickwork.sql.presence`).
PRESENCE_TIMEOUT = 5


def presence_engine_for(url: str | URL) -> Engine:
    """The engine of the presence connection to ``url``."""
    connect_args: dict[str, object] = {"connect_timeout": PRESENCE_TIMEOUT}
    if make_url(url).get_backend_name() == "mysql":
        # PyMySQL's connect_timeout covers the TCP connect only: a server (or a proxy) that
        # accepts and then stays silent would hold the handshake, and a dead connection's
        # SELECT 1, for as long as TCP lets it. Every statement on it is instant.
        connect_args |= {"read_timeout": PRESENCE_TIMEOUT, "write_timeout": PRESENCE_TIMEOUT}
    # Its own engine without a pool: the presence connection stays open for the process,
    # and must not hold one of the pool's connections or be handed to anyone else.
    return create_engine(url, poolclass=NullPool, connect_args=connect_args)


class ServerStore(SQLStore):
    """A SQL store on a database server.

    :param url: the database's URL (``${ENV}`` is expanded by the config)
    :param pool_size: connections kept open per node
    :param lock_timeout: seconds a statement waits for a row lock another session holds before
        it fails (a store fault: logged, backed off, retried); the hot paths skip locked rows
    :param statement_timeout: seconds any statement may run before the database cancels it
    """

    options = SERVER_OPTIONS
    #: The plugin's name in messages (``[store] plugin``).
    plugin_name: ClassVar[str]
    #: The database's name in :meth:`describe` (``PostgreSQL``).
    database_title: ClassVar[str]
    #: What a URL looks like, for the message when none is given.
    url_example: ClassVar[str]
    #: The name of the thread that watches for changes.
    watcher_name: ClassVar[str]

    def __init__(
        self,
        url: str = "",
        *,
        claim: str | None = None,
        batch_size: int = 100,
        pool_size: int = 5,
        lock_timeout: float = 1.0,
        statement_timeout: float = 60.0,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__(claim=claim, batch_size=batch_size, clock=clock)
        self.lock_timeout = number("lock_timeout", lock_timeout, low=0.001, high=3600.0, unit="seconds")
        self.statement_timeout = number("statement_timeout", statement_timeout, low=1.0, high=86400.0, unit="seconds")
        if not url:
            raise ConfigError(f'url: the {self.plugin_name} store needs url = "{self.url_example}"')
        self.url = self.sqlalchemy_url(url)
        self.pool_size = integer("pool_size", pool_size, low=1, high=1000)
        self._watcher = ChangeWatcher(self.watcher_name)

    @staticmethod
    @abstractmethod
    def sqlalchemy_url(url: str) -> str:
        """The URL SQLAlchemy connects with (driver pinned); errors name the part that is
        wrong, never the URL: after ``${ENV}`` expansion it holds the password."""

    def describe(self) -> str:
        return f"{self.database_title} database {dburl.masked(self.url)}"

    def presence_engine(self) -> Engine | None:
        return presence_engine_for(self.url)

    def close(self) -> None:
        self._watcher.stop()
        self.close_presence()
        super().close()
