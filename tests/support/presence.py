"""A node's presence on the database server, seen and ended from outside (tests/sql/test_presence.py
and the stall tests): the session-level lock each node holds."""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import text

from tickwork.sql.presence import presence_name
from tickwork.sql.store import SQLStore


def session_ended(check: Callable[[], bool]) -> bool:
    """Whether ``check`` holds within 5 s: a server frees a closed session's locks as it handles
    the disconnect, a moment after the client closed (as a node's next beat would find)."""
    deadline = time.monotonic() + 5
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def end_session_on_the_server(store: SQLStore, node_id: str) -> None:
    """End ``node_id``'s presence session from another session, as a database restart (or an
    administrator) would, without the node knowing."""
    name = presence_name(store.engine.url.database or "", node_id)
    with store.engine.begin() as conn:
        if store.engine.dialect.name == "postgresql":
            ended = conn.execute(
                text(
                    "SELECT pid, pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                    "AND pid <> pg_backend_pid() AND classid = :ns AND objid = :key"
                ),
                {"ns": 0x7469636B + 2, "key": presence_key_unsigned(name)},
            ).all()
        else:
            holder = conn.execute(text("SELECT IS_USED_LOCK(:n)"), {"n": name}).scalar()
            assert holder is not None
            conn.execute(text(f"KILL CONNECTION {int(holder)}"))
            ended = [holder]
    assert ended, "no presence session found"
    # Both servers end a session asynchronously (pg_terminate_backend signals the backend, KILL
    # marks the thread): wait until it is gone, or the node may still find its session alive.
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        with store.engine.connect() as conn:
            if store.engine.dialect.name == "postgresql":
                alive = conn.execute(
                    text("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(:pids)"),
                    {"pids": [int(row[0]) for row in ended]},
                ).scalar()
            else:
                alive = conn.execute(text("SELECT IS_USED_LOCK(:n) IS NOT NULL"), {"n": name}).scalar()
        if not alive:
            return
        time.sleep(0.02)
    raise AssertionError(f"the presence session of {node_id} did not end within 10 s")


def held(store: SQLStore, node_id: str) -> float | None:
    """``store.hold_presence(node_id)`` once its keeper has checked (or taken) the lock: the age of
    the lock, or ``None`` when it is not held."""
    return store.hold_presence(node_id, wait=5.0)


def presence_key_unsigned(name: str) -> int:
    from tickwork_postgres.operations import presence_key

    # pg_locks shows the keys as oid (unsigned 32 bits).
    return presence_key(name) & 0xFFFFFFFF
