"""What the stores on a database server share: the URL, the connection pool and the thread that
watches for other processes' changes (their common options: :class:`~tickwork.sql.settings.ServerStoreSettings`)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import URL, Engine, create_engine, make_url
from sqlalchemy.pool import NullPool

from . import dburl
from .settings import ServerStoreSettings
from .store import SQLStore
from .watch import ChangeWatcher

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

    :param url: the database's URL (``${ENV}`` is expanded by the config); the other options
        (``pool_size``, ``lock_timeout``, ``statement_timeout``, ...) are the keys of its
        :attr:`section`
    """

    settings: ServerStoreSettings
    #: The database's name in :meth:`describe` (``PostgreSQL``).
    database_title: ClassVar[str]
    #: The name of the thread that watches for changes.
    watcher_name: ClassVar[str]

    def __init__(self, url: str | None = None, *, clock: Callable[[], datetime] | None = None, **options: Any) -> None:
        super().__init__(clock=clock, **({} if url is None else {"url": url}), **options)
        self.lock_timeout = self.settings.lock_timeout
        self.statement_timeout = self.settings.statement_timeout
        self.url = self.sqlalchemy_url(self.settings["url"])
        self.pool_size = self.settings.pool_size
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
