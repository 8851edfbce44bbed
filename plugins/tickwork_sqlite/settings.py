"""The options of ``[store] plugin = "sqlite"``, declared once (importable without opening anything)."""

from __future__ import annotations

from tickwork.config import Flag, Number, Text
from tickwork.sql.settings import ClaimChoice, SQLStoreSettings, poll_interval


class SQLiteSettings(SQLStoreSettings):
    """``[store]`` with ``plugin = "sqlite"`` (docs/configuration.md#store-plugin--sqlite)."""

    path = Text(
        "tickwork.db",
        nonblank=True,
        help="The database file, relative to the working directory.",
        details="Its directory must exist. A new file is created with mode `0600` (its `-wal` and `-shm` files "
        "follow): whoever can write it chooses the code nodes run ([security.md](security.md)). An existing file "
        "keeps its mode.",
    )
    claim = ClaimChoice("sqlite", ("optimistic", "unique-fire", "mark"))
    busy_timeout = Number(
        30,
        low=0,
        high=3600,
        help='Seconds a transaction waits for the write lock before failing with "database is locked".',
        details="The lock is held by another process, or by another thread of the same process (the store runs "
        "its transactions one at a time on one connection). Waits beyond an hour mean a typo.",
    )
    poll_interval = poll_interval(
        0.1, what="(how fast a node notices a `tickwork jobs trigger` or another node's release)"
    )
    create = Flag(
        True,
        help="Create the schema in a new, empty database file.",
        details="A file whose schema is older than (or unknown to) this tickwork is never migrated on its own: the "
        "node refuses to start until `tickwork db upgrade` has run. With `create = false` an empty file is "
        "refused too.",
    )
