"""The SQLAlchemy Core store shared by the SQLite, PostgreSQL and MySQL plugins.

A dialect plugin subclasses :class:`SQLStore` (or :class:`~tickwork.sql.serverstore.ServerStore`
for a database server), names its :class:`~tickwork.sql.features.Operations` and creates the
engine; everything else is one code path that branches on the database's
:class:`~tickwork.sql.features.Features` ("``RETURNING`` or write-then-read"), kept in parts with
one job each:

- :mod:`.storecore`: the common options, engine, transactions, clock, and the composed parts:
  :mod:`.features` (what the database can do, how it spells what differs), :mod:`.statements`
  (the statement cache), :mod:`.buckets` (ownership filters), :mod:`.lifecycle` (the schema);
- :mod:`.rows` (rows to structures), :mod:`.retry`
  (transient errors);
- :mod:`.schedulewrites`: adding, updating, syncing, enabling and removing schedules;
- :mod:`.claiming`: claiming due fires (the fair claim's namespace turns in :mod:`.claimturns`),
  the time the next is due, giving claims back; :mod:`.claimedruns`: the run rows of what a claim
  won, and the claims read back;
- :mod:`.attempts`: a retry's next attempt opened under its claim's fence;
- :mod:`.starting`: fenced starts of fires claimed ahead, and the takeover of late ones;
- :mod:`.ending`: ending runs (the fenced batch release), renewing and parking;
- :mod:`.nodestate`: heartbeats and releasing what a node holds (on :mod:`.starting`);
- :mod:`.presence`: a node's presence lock, and releasing a node whose session ended (on
  :mod:`.nodestate`);
- :mod:`.historyqueries`: history and admin reads, pruning;
- :mod:`.pausing` (pauses, failures counted) and :mod:`.backfilling` (the backfill queue);
- :mod:`.rerunning`: reruns of fires abandoned with their node (``on_abandon = "rerun"``).
- :mod:`.concurrency`: admitting fires under ``max_concurrent`` and concurrency keys.
- :mod:`.healthrecords`: the announced health states and the whole failure streak of a schedule.
- :mod:`.versioning`: the versions of schedules' definitions (written with each write, read back).
- :mod:`.tokens`: the API tokens (their digests, roles and namespaces).
"""

from __future__ import annotations

from ..structures import MAX_ERROR_CHARS
from ..structures import cap_error as cap
from .attempts import Attempts
from .backfilling import Backfilling
from .claiming import Claiming
from .concurrency import Concurrency
from .ending import Ending
from .handoffs import Handoffs
from .healthrecords import HealthRecordsSQL
from .historyqueries import HistoryQueries
from .presence import Presence
from .rerunning import Rerunning
from .retry import transient_retry
from .rows import UNHELD, next_fire_values, schedule_from_row, spec_from_row, spec_values, utcnow
from .schedulewrites import ScheduleWriting
from .storecore import SQLCore
from .tokens import TokensSQL
from .versioning import ScheduleVersions


class SQLStore(
    ScheduleWriting,
    Claiming,
    Concurrency,
    Ending,
    Presence,
    HistoryQueries,
    Handoffs,
    Backfilling,
    Rerunning,
    Attempts,
    HealthRecordsSQL,
    ScheduleVersions,
    TokensSQL,
):
    """Store on SQLAlchemy 2 Core (see :class:`~tickwork.sql.storecore.SQLCore` for its
    parameters). A dialect plugin subclasses it."""


__all__ = [
    "MAX_ERROR_CHARS",
    "UNHELD",
    "SQLCore",
    "SQLStore",
    "cap",
    "next_fire_values",
    "schedule_from_row",
    "spec_from_row",
    "spec_values",
    "transient_retry",
    "utcnow",
]
