"""The options of ``[store] plugin = "mysql"``, declared once (importable without PyMySQL)."""

from __future__ import annotations

from tickwork.config import URL
from tickwork.sql.settings import ClaimChoice, ServerStoreSettings, poll_interval


class MySQLSettings(ServerStoreSettings):
    """``[store]`` with ``plugin = "mysql"`` (docs/configuration.md#store-plugin--mysql)."""

    url = URL(
        schemes=("mysql", "mariadb", "mysql+pymysql", "mariadb+pymysql"),
        example="mysql://user:password@host:3306/dbname",
        help="`mysql://user:password@host:port/dbname` (`mariadb://` is accepted; PyMySQL and `utf8mb4` are always "
        "used).",
        details="A malformed URL is refused naming the part that is wrong, never the URL itself.",
    )
    # advisory: GET_LOCK locks belong to the session, not the transaction: a lock taken in a
    # claim outlives its commit (and a pooled connection) unless released by hand, so the
    # strategy's "locks end with the transaction" does not hold; mark: not worth a third copy.
    claim = ClaimChoice("mysql", ("skip-locked", "optimistic", "unique-fire"))
    poll_interval = poll_interval(
        0.5,
        what="(MySQL has no LISTEN/NOTIFY): a new schedule, or an earlier claimable fire time, wakes a sleeping node",
    )
