"""The per-namespace limits in the SQL store (docs/teams.md#limits): the schedules a namespace may
hold, checked in the transaction of the write that adds them, and the lock that makes the writes
(and admissions) of one namespace take turns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sqlalchemy import Connection, func, select

from ..errors import NamespaceLimitError
from ..structures import NAMESPACE_KEY_PREFIX, NamespaceLimits
from .schema import concurrency_keys, schedules

if TYPE_CHECKING:
    from .storecore import SQLCore


def lock_key(store: SQLCore, conn: Connection, key: str) -> None:
    """Lock the row of ``key`` in ``tickwork_concurrency_keys`` until the transaction ends
    (created on first use): every transaction locking it waits for the one before to commit."""
    lock = select(concurrency_keys.c.key).where(concurrency_keys.c.key == key).with_for_update()
    # Locked first, inserted only on the key's first use: an INSERT IGNORE of an existing
    # row takes a shared lock on MySQL, and two of them upgrading to FOR UPDATE deadlock.
    if conn.scalar(lock) is None:
        conn.execute(store.insert_ignore(concurrency_keys).values(key=key))
        conn.execute(lock)
    store.statements += 2


def check_room(store: SQLCore, conn: Connection, adding: Mapping[str, int]) -> None:
    """Refuse the write that adds ``adding[namespace]`` schedules to a namespace whose
    ``max_schedules`` they would pass: the namespace's key locked first (two adds at once count
    one after the other), then its schedules counted, by the database in this transaction.

    :raises NamespaceLimitError: naming the namespace and its limit
    """
    for namespace in sorted(adding):
        limit = store.namespace_limits.get(namespace, _NONE).max_schedules
        if limit is None or adding[namespace] <= 0:
            continue
        lock_key(store, conn, NAMESPACE_KEY_PREFIX + namespace)
        held = int(
            conn.scalar(select(func.count()).select_from(schedules).where(schedules.c.namespace == namespace)) or 0
        )
        if held + adding[namespace] > limit:
            raise NamespaceLimitError(namespace, limit, held, adding[namespace])


_NONE = NamespaceLimits()
