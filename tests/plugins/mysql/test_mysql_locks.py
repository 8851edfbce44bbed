"""Rows passed over as locked on MySQL / MariaDB: the messages name who held them.

SKIP LOCKED passes over rows whoever holds them. A session of someone else's (here a plain
SQLAlchemy connection doing ``SELECT ... FOR UPDATE``, like a console) is named as another database
session, at WARNING; another tickwork node's own transaction is named as that node's, at INFO, and
never called another database session (before, both were "another database session holds their
schedules' rows locked" at WARNING, which the nodes of a busy cluster logged in normal operation).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from sqlalchemy import Connection, create_engine, event, make_url, select, text
from sqlalchemy.exc import DBAPIError

from tickwork.sql.schema import schedules
from tickwork.structures import Claim, Finish, Outcome, RunStatus
from tickwork.testing.contract_starts import claim_ahead
from tickwork_mysql.locks import HOLDERS
from tickwork_mysql.store import MySQLStore, sqlalchemy_url

OK = Outcome(RunStatus.SUCCEEDED)


def opened(url: str, node: str) -> MySQLStore:
    store = MySQLStore(url)
    store.upgrade()
    store.open()
    assert store.register_node(node, f"instance-{node}", 30.0) is None
    return store


@pytest.fixture
def node_a(mysql_url: str) -> Iterator[MySQLStore]:
    store = opened(mysql_url, "n1")
    yield store
    store.close()


@pytest.fixture
def node_b(mysql_url: str, node_a: MySQLStore) -> Iterator[MySQLStore]:
    store = opened(mysql_url, "n2")
    yield store
    store.close()


def sampled(store: MySQLStore, holds: Callable[[set[int]], bool]) -> None:
    """Wait until InnoDB's sample of the transactions holding row locks satisfies ``holds``
    (given their connection ids): what ``store`` reads next is then that sample. INNODB_TRX is
    sampled again only when it has not been read for 0.1 s: this waits longer between reads."""
    held: set[int] = set()
    with store.engine.connect() as conn:
        for _ in range(100):
            held = {int(r.thread) for r in conn.execute(HOLDERS)}
            if holds(held):
                return
            conn.rollback()
            time.sleep(0.15)
    raise AssertionError(f"InnoDB's sample of its transactions never showed the lock (holders: {held})")


@contextlib.contextmanager
def stray_lock(url: str, name: str, seen_by: MySQLStore | None) -> Iterator[int]:
    """A session that is not tickwork's holding ``name``'s schedule row locked (in what
    ``seen_by`` reads next, if given); its connection id."""
    engine = create_engine(sqlalchemy_url(url))
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT id FROM tickwork_schedules WHERE name = :name FOR UPDATE"), {"name": name}).all()
            thread = int(conn.scalar(text("SELECT CONNECTION_ID()")))
            if seen_by is not None:
                sampled(seen_by, lambda held: held == {thread})
            yield thread
            conn.rollback()
    finally:
        engine.dispose()


@contextlib.contextmanager
def node_lock(store: MySQLStore, name: str, seen_by: MySQLStore) -> Iterator[Connection]:
    """One of ``store``'s own pooled sessions holding ``name``'s schedule row locked."""
    with store.engine.connect() as conn:
        conn.execute(select(schedules.c.id).where(schedules.c.name == name).with_for_update()).all()
        thread = int(conn.scalar(text("SELECT CONNECTION_ID()")))
        sampled(seen_by, lambda held: held == {thread})
        yield conn
        conn.rollback()


def messages(caplog: pytest.LogCaptureFixture, level: int = logging.DEBUG) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= level and r.name.startswith("tickwork")]


def started_claim(store: MySQLStore, name: str) -> Claim:
    claim = claim_ahead(store, name, 30.0)
    assert store.start_held("n1", [claim], 5.0, lead=60.0) == [True]
    return claim


def test_a_start_refused_by_a_stray_lock_names_the_session_at_warning(
    node_a: MySQLStore, mysql_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    claim = claim_ahead(node_a, "held", 30.0)
    with stray_lock(mysql_url, "held", node_a) as thread, caplog.at_level(logging.DEBUG):
        assert node_a.start_held("n1", [claim], 5.0, lead=60.0) == [False]
    (said,) = [m for m in messages(caplog, logging.WARNING) if m.startswith("cannot start")]
    assert "cannot start 1 fire(s) claimed ahead (held): another database session holds rows locked" in said
    user = make_url(sqlalchemy_url(mysql_url)).username
    assert f"thread {thread} ({user}@" in said and "row(s) locked, idle in its transaction" in said, said


def test_a_start_passed_over_for_an_instant_is_asked_again_by_the_round(
    node_a: MySQLStore, mysql_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Another session holds the row while the round's locking read passes over it, and lets go
    # right after (as another node's claim does with each row its scan of the due index
    # examines): the round asks again at once, and the fire starts instead of waiting for its
    # takeover.
    claim = claim_ahead(node_a, "held", 30.0)
    engine = create_engine(sqlalchemy_url(mysql_url))
    try:
        with engine.connect() as other:
            other.execute(text("SELECT id FROM tickwork_schedules WHERE name = 'held' FOR UPDATE")).all()

            def let_go(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
                if "SKIP LOCKED" in statement and other.in_transaction():
                    other.rollback()

            event.listen(node_a.engine, "after_cursor_execute", let_go)
            try:
                with caplog.at_level(logging.DEBUG):
                    done = node_a.start_round("n1", [claim], 5.0, 60.0)
            finally:
                event.remove(node_a.engine, "after_cursor_execute", let_go)
    finally:
        engine.dispose()
    assert done.granted == (True,)
    assert not [m for m in messages(caplog) if m.startswith("cannot start")]


def test_a_start_refused_by_another_nodes_transaction_names_the_node_not_another_session(
    node_a: MySQLStore, node_b: MySQLStore, caplog: pytest.LogCaptureFixture
) -> None:
    claim = claim_ahead(node_a, "held", 30.0)
    with node_lock(node_b, "held", node_a), caplog.at_level(logging.DEBUG):
        assert node_a.start_held("n1", [claim], 5.0, lead=60.0) == [False]
    said = [m for m in messages(caplog) if m.startswith("cannot start")]
    assert said == [
        "cannot start 1 fire(s) claimed ahead (held): their schedules' rows were locked by tickwork node n2's "
        "transaction: contention between tickwork's own transactions, normal under load; they are taken over "
        "and run once the lock is released"
    ]
    assert not messages(caplog, logging.WARNING)
    assert not any("another database session" in m for m in messages(caplog))


def test_a_transaction_whose_session_has_ended_is_not_named_from_innodbs_older_sample(
    node_a: MySQLStore, mysql_url: str
) -> None:
    # INNODB_TRX is a sample kept 0.1 s; PROCESSLIST is read live. A session that held a lock when
    # the sample was taken and is gone now holds nothing: it is not named (it was, as another
    # database session of no user, when a node read within 0.1 s of another reader's sample).
    claim_ahead(node_a, "held", 30.0)
    with stray_lock(mysql_url, "held", node_a) as thread:
        pass  # the sample shows its lock; leaving ends its transaction and its session
    with node_a.engine.connect() as conn:
        alive = text("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = :thread")
        for _ in range(200):
            if not conn.scalar(alive, {"thread": thread}):
                break
            time.sleep(0.001)
        held = {int(r.thread) for r in conn.execute(HOLDERS)}
    assert thread not in held


def test_its_own_other_transaction_is_named_as_this_nodes(node_a: MySQLStore, caplog: pytest.LogCaptureFixture) -> None:
    claim = claim_ahead(node_a, "held", 30.0)
    with node_lock(node_a, "held", node_a), caplog.at_level(logging.DEBUG):
        assert node_a.start_held("n1", [claim], 5.0, lead=60.0) == [False]
    (said,) = [m for m in messages(caplog, logging.INFO) if m.startswith("cannot start")]
    assert "locked by this node's (n1) other transaction" in said, said
    assert not messages(caplog, logging.WARNING)


def test_an_end_passed_over_for_a_stray_lock_names_the_session_and_for_a_node_only_at_debug(
    node_a: MySQLStore, node_b: MySQLStore, mysql_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = started_claim(node_a, "first"), started_claim(node_a, "second")
    ended_at = node_a.now() + timedelta(seconds=1)
    with node_lock(node_b, "first", node_a), caplog.at_level(logging.DEBUG):
        assert node_a.finish("n1", [Finish(first, OK, ended_at)]) == [None]  # kept for later, not lost
    assert not messages(caplog, logging.INFO)
    debug = [m for m in messages(caplog) if m.startswith("cannot write the end")]
    assert debug and all("tickwork node n2's transaction" in m for m in debug), debug
    caplog.clear()

    # The same node's store made again (its last answer, up to 0.5 s old, is not reused).
    again = opened(mysql_url, "n1")
    try:
        with stray_lock(mysql_url, "second", again) as thread, caplog.at_level(logging.DEBUG):
            assert again.finish("n1", [Finish(second, OK, ended_at)]) == [None]
        (said,) = messages(caplog, logging.WARNING)  # once, though the store asked three times
        assert said.startswith("cannot write the end of 1 run(s) now: another database session holds rows locked")
        assert f"thread {thread} (" in said, said
        # Both rows free again: both ends land.
        assert again.finish("n1", [Finish(first, OK, ended_at), Finish(second, OK, ended_at)]) == [True, True]
    finally:
        again.close()


def test_a_session_that_is_tickwork_but_no_nodes_is_not_called_another_session(
    node_a: MySQLStore, mysql_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # An admin command's store (tickwork jobs ..., the web UI): tickwork's, of no node.
    admin = MySQLStore(mysql_url)
    admin.open()
    claim = claim_ahead(node_a, "held", 30.0)
    try:
        with node_lock(admin, "held", node_a), caplog.at_level(logging.DEBUG):
            assert node_a.start_held("n1", [claim], 5.0, lead=60.0) == [False]
    finally:
        admin.close()
    (said,) = [m for m in messages(caplog, logging.INFO) if m.startswith("cannot start")]
    assert "a tickwork session of no live node" in said and "another database session" not in said, said


@pytest.fixture
def unprivileged_url(mysql_url: str) -> Iterator[str]:
    """``mysql_url`` as a user with every right on its database and no PROCESS privilege."""
    url = make_url(sqlalchemy_url(mysql_url))
    user, password = f"tw_{secrets.token_hex(4)}", secrets.token_hex(8)
    admin = create_engine(url)
    try:
        with admin.begin() as conn:
            conn.execute(text(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'"))
            conn.execute(text(f"GRANT ALL ON `{url.database}`.* TO '{user}'@'%'"))
    except DBAPIError as exc:  # a throwaway server run without grant tables has no users
        admin.dispose()
        pytest.skip(f"cannot create a user on this server: {exc.orig}")
    try:
        yield url.set(username=user, password=password).render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP USER '{user}'@'%'"))
        admin.dispose()


def test_without_the_process_privilege_the_message_says_it_cannot_tell(
    unprivileged_url: str, mysql_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = opened(unprivileged_url, "n1")
    try:
        claim = claim_ahead(store, "held", 30.0)
        with stray_lock(mysql_url, "held", None), caplog.at_level(logging.DEBUG):
            assert store.start_held("n1", [claim], 5.0, lead=60.0) == [False]
            assert store.start_held("n1", [claim], 5.0, lead=60.0) == [False]
    finally:
        store.close()
    said = [m for m in messages(caplog, logging.WARNING) if m.startswith("cannot start")]
    assert len(said) == 2 and all("this database does not say whose" in m for m in said), said
    # Asked once: the refusal is remembered, and the way to get names said once.
    assert len([m for m in messages(caplog) if "needs the PROCESS privilege" in m]) == 1


def test_every_session_of_a_store_is_marked_and_named_for_its_node(node_a: MySQLStore) -> None:
    with node_a.engine.connect() as conn:
        thread = conn.scalar(text("SELECT CONNECTION_ID()"))
        marked = conn.scalar(text("SELECT IS_USED_LOCK(CONCAT('tickwork-session:', CONNECTION_ID()))"))
        named = conn.scalar(
            text(
                "SELECT IS_USED_LOCK(CONCAT('tickwork-session:', CONNECTION_ID(), ':', "
                "LEFT(SHA1(CONCAT(DATABASE(), ':', 'n1')), 24)))"
            )
        )
    assert marked == thread and named == thread


def test_the_connections_of_a_store_share_one_tls_context(node_a: MySQLStore) -> None:
    # PyMySQL's TLS-if-offered default built a context per connection, loading the system's CA
    # certificates each time (~70 ms of CPU per connection; node start-up opens several).
    first, second = node_a.engine.raw_connection(), node_a.engine.raw_connection()
    try:
        a, b = first.dbapi_connection, second.dbapi_connection
        assert a is not b
        if getattr(a, "ctx", None) is None:
            pytest.skip("this PyMySQL builds no TLS context by default")
        assert a.ctx is b.ctx
    finally:
        first.close()
        second.close()


# -- PostgreSQL: the shared message where the store does not name the holders ----------------------


def test_on_postgres_a_start_refused_by_a_lock_says_whose_it_may_be_and_that_it_cannot_tell(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The PostgreSQL store does not read who holds a row (yet): whoever it is, the message offers
    # both, never "another database session" as a fact, and stays a warning as before.
    from tickwork_postgres.store import PostgresStore

    stores = [PostgresStore(postgres_url) for _ in range(2)]
    stores[0].upgrade()
    for store in stores:
        store.open()
    stray = create_engine(postgres_url)
    try:
        claim = claim_ahead(stores[0], "held", 30.0)
        for holder in (stray, stores[1].engine):  # a session of someone else's, another node's
            with holder.connect() as conn, caplog.at_level(logging.DEBUG):
                conn.execute(select(schedules.c.id).where(schedules.c.name == "held").with_for_update()).all()
                assert stores[0].start_held("n1", [claim], 5.0, lead=60.0) == [False]
                conn.rollback()
    finally:
        stray.dispose()
        for store in stores:
            store.close()
    said = [m for m in messages(caplog, logging.WARNING) if m.startswith("cannot start")]
    assert (
        said
        == [
            "cannot start 1 fire(s) claimed ahead (held): another transaction holds their schedules' rows locked "
            "(another database session's, or another tickwork node's: this database does not say whose); they are "
            "taken over and run once the lock is released"
        ]
        * 2
    )
