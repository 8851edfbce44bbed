"""The SQLAlchemy Core store shared by the SQLite, PostgreSQL and MySQL plugins.

A dialect plugin subclasses :class:`SQLStore` and supplies the engine, the database clock
expression, change notification and the batched release; everything else is one code path,
kept in parts with one job each:

- :mod:`.storecore`: engine, transactions, statement cache, dialect hooks, shared row helpers;
- :mod:`.schedulewrites`: adding, updating, syncing, enabling and removing schedules;
- :mod:`.claiming`: claiming due fires and recording their runs;
- :mod:`.ending`: ending runs (the fenced batch release), renewing and parking;
- :mod:`.nodestate`: heartbeats and releasing what a node holds;
- :mod:`.historyqueries`: history and admin reads, pruning.
"""

from __future__ import annotations

from .claiming import Claiming
from .ending import Ending
from .historyqueries import HistoryQueries
from .nodestate import NodeState
from .schedulewrites import ScheduleWriting
from .storecore import (
    MAX_ERROR_CHARS,
    UNHELD,
    SQLCore,
    cap,
    owned_mask,
    retriggered,
    schedule_from_row,
    spec_from_row,
    spec_values,
    transient_retry,
    utcnow,
)


class SQLStore(ScheduleWriting, Claiming, Ending, NodeState, HistoryQueries):
    """Store on SQLAlchemy 2 Core (see :class:`~tickwork.sql.storecore.SQLCore` for its
    parameters). A dialect plugin subclasses it."""


__all__ = [
    "MAX_ERROR_CHARS",
    "UNHELD",
    "SQLCore",
    "SQLStore",
    "cap",
    "owned_mask",
    "retriggered",
    "schedule_from_row",
    "spec_from_row",
    "spec_values",
    "transient_retry",
    "utcnow",
]
