"""The options the SQL stores share, each declared once: :class:`SQLStoreSettings` (every SQL
store) and :class:`ServerStoreSettings` (the stores on a database server), which each store's
own Section extends (``tickwork_sqlite.settings``, ``tickwork_postgres.settings``,
``tickwork_mysql.settings``). Importable without any database driver."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config.declarations import Choice, Integer, Number
from ..config.numbers import DAY
from ..config.tables import StoreSettings
from ..errors import ConfigError


class ClaimChoice(Choice):
    """The ``claim`` option: one of the store's claim strategies, the first its default."""

    def __init__(self, database: str, strategies: Sequence[str]) -> None:
        listed = ", ".join(f"`{name}`" for name in strategies)
        super().__init__(
            strategies,
            strategies[0],
            help="The [claim strategy](#claim-strategies): how a node takes due schedules without another node "
            "taking the same fire.",
            details=f"One of {listed}.",
        )
        self.database = database

    def convert(self, where: str, value: Any) -> str:
        if value not in self.options:
            raise ConfigError(
                f"{where}: claim strategy {value!r} is not supported by the {self.database} store; "
                f"it supports: {', '.join(self.options)}"
            )
        return str(value)

    def type_text(self) -> str:
        return "string"


def poll_interval(default: float, *, what: str) -> Number:
    """The ``poll_interval`` option of a store that polls for other processes' changes: a poll
    every few milliseconds would keep a core busy; waits beyond a minute miss changes too long."""
    return Number(
        default,
        low=0.01,
        high=60,
        help=f"Seconds between checks for changes made by other processes {what}.",
    )


class SQLStoreSettings(StoreSettings):
    """The options of every SQL store (a store's own Section adds ``claim`` with its strategies,
    :class:`ClaimChoice`)."""


class ServerStoreSettings(SQLStoreSettings):
    """The options of every store on a database server (a store's Section adds its ``url``)."""

    pool_size = Integer(
        5,
        low=1,
        high=1000,
        help="Database connections kept open by each node (plus up to 2 overflow connections, and on PostgreSQL one "
        "more for `LISTEN`).",
    )
    lock_timeout = Number(
        1,
        low=0.001,
        high=3600,
        help="Seconds a statement waits for a row lock another database session holds (a stray "
        "`SELECT ... FOR UPDATE`, a long transaction) before it fails: a store fault, logged at WARNING and backed "
        "off from, never a silent stall.",
        details="Set on every connection: PostgreSQL's `lock_timeout`; MySQL's `innodb_lock_wait_timeout`, "
        "which counts whole seconds (rounded, at least 1); a lock wait that times out is not rerun. Every "
        "path of a node's loop and its heartbeat (the claim by every strategy, the start of held fires, the "
        "takeover, the end writer, renewals, retries, parks, a dead node's release, ...) skips locked rows "
        "instead of waiting ([claim-protocol.md](claim-protocol.md#locks-held-by-other-sessions)); a "
        "deployment sync's wait for another node's is bounded by `statement_timeout` only.",
    )
    statement_timeout = Number(
        60,
        low=1,
        high=DAY,
        help="Seconds a statement may run before the database cancels it.",
        details="PostgreSQL: every statement (`SET statement_timeout`); it also bounds the wait of a deployment "
        "sync for another node's. MariaDB: every statement (`max_statement_time`); MySQL: `SELECT`s only "
        "(`max_execution_time`).",
    )
