"""Nodes and what they hold: heartbeats, registration, releasing a dead or stopped node's claims, reaping."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Row,
    delete,
    insert,
    literal,
    select,
    tuple_,
    update,
)

from ..structures import (
    Claim,
    NodeRecord,
    RunStatus,
)
from .retry import log, transient_retry
from .rowlocks import lock_free_rows
from .rows import UNHELD
from .schema import nodes, runs, schedules
from .starting import UNSTARTED, Starting


class NodeState(Starting):
    """Nodes and what they hold: heartbeats, registration, releasing a dead or stopped node's claims, reaping."""

    def _abandon_claims_of(self, conn: Connection, node_id: str, reason: str, now: Any) -> tuple[int, int]:
        """Record the node's running runs ``abandoned`` and release its schedules; the counts
        released and passed over. Fires it claimed ahead and never started are given back
        instead (their run rows deleted): the fenced start keeps the node from starting them
        now, so the next claim runs them.

        A schedule row another session holds locked (a stray ``SELECT ... FOR UPDATE``) is
        passed over, its run left running, to be released at a later call: waiting for it held
        up the heartbeat thread that calls this for a dead node (for ``lock_timeout``, eight
        times on MySQL, which retries a lock wait), long enough for this node's own heartbeat to
        go stale and the others to declare it dead too."""
        self._give_back_unstarted(conn, schedules.c.claimed_by == node_id)
        held = (schedules.c.claimed_by == node_id, schedules.c.state == "running")
        free = set(lock_free_rows(conn, *held))
        locked = set(conn.scalars(select(schedules.c.id).where(*held)).all()) - free
        abandon = update(runs).where(runs.c.node == node_id, runs.c.status == "running")
        if locked:
            abandon = abandon.where(runs.c.schedule_id.not_in(sorted(locked)))
        conn.execute(abandon.values(status=RunStatus.ABANDONED.value, finished_at=now, error=reason))
        released = 0
        if free:
            released = conn.execute(
                update(schedules).where(schedules.c.id.in_(sorted(free)), *held).values(**UNHELD)
            ).rowcount
            if released:
                self._notify(conn)
        return int(released or 0), len(locked)

    def _give_back_unstarted(self, conn: Connection, which: Any) -> None:
        """Make idle the schedules matching ``which`` whose fire was claimed ahead and never
        started, deleting their run rows (:meth:`forget_unstarted_runs`)."""
        unstarted = conn.execute(
            select(schedules.c.id, schedules.c.claim_seq).where(which, UNSTARTED).with_for_update(skip_locked=True)
        ).all()
        if not unstarted:
            return
        conn.execute(update(schedules).where(schedules.c.id.in_([r.id for r in unstarted])).values(**UNHELD))
        self.forget_unstarted_runs(conn, [(r.id, r.claim_seq) for r in unstarted])

    @transient_retry
    def release_node(self, node_id: str, reason: str) -> int:
        now = self.now_expr()
        with self._tx() as conn:
            # What another session holds locked stays this node's, untracked: the engine's
            # reconcile releases it once it is free.
            return self._abandon_claims_of(conn, node_id, reason, now)[0]

    @transient_retry
    def release_untracked(self, node_id: str, tracked: Sequence[Claim], reason: str) -> int:
        keep = {(c.schedule_id, c.claim_seq) for c in tracked}
        with self._tx() as conn:
            # Locked where the database can (PostgreSQL, MySQL; SQLite writes one at a time), so
            # what is read is what is released. No RETURNING: MySQL has none.
            held = conn.execute(
                select(schedules.c.id, schedules.c.claim_seq)
                .where(schedules.c.claimed_by == node_id, schedules.c.state == "running")
                # Rows another session holds are left for the next reconcile, not waited for.
                .with_for_update(skip_locked=True)
            ).all()
            stranded = [(r.id, r.claim_seq) for r in held if (r.id, r.claim_seq) not in keep]
            if not stranded:
                return 0
            # Claimed ahead and never started: given back (run rows deleted), not abandoned.
            self._give_back_unstarted(conn, tuple_(schedules.c.id, schedules.c.claim_seq).in_(stranded))
            conn.execute(
                update(schedules)
                .where(
                    tuple_(schedules.c.id, schedules.c.claim_seq).in_(stranded),
                    schedules.c.claimed_by == node_id,
                    schedules.c.state == "running",
                )
                .values(**UNHELD)
            )
            conn.execute(
                update(runs)
                .where(
                    tuple_(runs.c.schedule_id, runs.c.claim_seq).in_(stranded),
                    runs.c.node == node_id,
                    runs.c.status == "running",
                )
                .values(status=RunStatus.ABANDONED.value, finished_at=self.now_expr(), error=reason)
            )
            self._notify(conn)
        return len(stranded)

    @transient_retry
    def reap_expired(self, grace_seconds: float) -> int:
        now = self.now_expr()
        deadline = self._plus_seconds(schedules.c.claimed_at, schedules.c.timeout_s + literal(grace_seconds))
        expired = (schedules.c.state == "running", deadline < now)
        # Rows another session holds locked are reaped next time, not waited for.
        lockable = select(schedules.c.id).where(*expired).with_for_update(skip_locked=True).scalar_subquery()
        with self._tx() as conn:
            if self.features.update_returning:
                rows = conn.execute(
                    update(schedules)
                    .where(schedules.c.id.in_(lockable), *expired)
                    .values(**UNHELD)
                    .returning(schedules.c.id, schedules.c.claim_seq, schedules.c.name)
                ).all()
            else:
                rows = conn.execute(
                    select(schedules.c.id, schedules.c.claim_seq, schedules.c.name)
                    .where(*expired)
                    .with_for_update(skip_locked=True)
                ).all()
                if rows:
                    conn.execute(update(schedules).where(schedules.c.id.in_([r.id for r in rows])).values(**UNHELD))
            for row in rows:
                conn.execute(
                    update(runs)
                    .where(
                        runs.c.schedule_id == row.id,
                        runs.c.claim_seq == row.claim_seq,
                        runs.c.status == "running",
                    )
                    .values(
                        status=RunStatus.TIMED_OUT.value,
                        finished_at=now,
                        error=f"hard timeout: claim not ended within timeout + {grace_seconds:g}s grace",
                    )
                )
                log.warning("hard timeout: released %s (claim %s)", row.name, row.claim_seq)
            if rows:
                self._notify(conn)
        return len(rows)

    @transient_retry
    def heartbeat(self, node_id: str) -> datetime:
        now = self.now_expr()
        if not self.features.update_returning:
            return self._heartbeat_then_read(node_id)
        with self._tx() as conn:
            value = conn.execute(
                update(nodes).where(nodes.c.id == node_id).values(heartbeat_at=now).returning(nodes.c.heartbeat_at)
            ).scalar()
            if value is None:
                value = conn.execute(
                    self.insert_ignore(nodes)
                    .values(id=node_id, started_at=now, heartbeat_at=now, executors=self.announced.get(node_id))
                    .returning(nodes.c.heartbeat_at)
                ).scalar()
            if value is None:  # inserted concurrently by a namesake; refresh instead
                value = conn.execute(
                    update(nodes).where(nodes.c.id == node_id).values(heartbeat_at=now).returning(nodes.c.heartbeat_at)
                ).scalar_one()
        assert isinstance(value, datetime)
        return value

    @transient_retry
    def refresh_heartbeat(self, node_id: str) -> datetime | None:
        now = self.now_expr()
        refreshed = update(nodes).where(nodes.c.id == node_id).values(heartbeat_at=now)
        with self._tx() as conn:
            if self.features.update_returning:
                value = conn.execute(refreshed.returning(nodes.c.heartbeat_at)).scalar()
            else:
                value = self._refresh_then_read(conn, node_id)
        assert value is None or isinstance(value, datetime)
        return value

    def _refresh_then_read(self, conn: Connection, node_id: str) -> datetime | None:
        """Without ``UPDATE ... RETURNING``: the heartbeat refreshed and its new value (``None``:
        the node has no record), from the UPDATE's own reply where the database answers so
        (:meth:`Operations.answered`: one statement instead of two, every heartbeat of every
        MySQL node), else read after it."""
        answered = self.operations.answered(self.now_expr())
        refreshed = update(nodes).where(nodes.c.id == node_id)
        if answered is not None:
            result = conn.execute(refreshed.values(heartbeat_at=answered))
            return self.operations.answer(result) if result.rowcount else None
        if not conn.execute(refreshed.values(heartbeat_at=self.now_expr())).rowcount:
            return None
        value = conn.scalar(select(nodes.c.heartbeat_at).where(nodes.c.id == node_id))
        assert isinstance(value, datetime)
        return value

    def _heartbeat_then_read(self, node_id: str) -> datetime:
        """:meth:`heartbeat` without ``UPDATE ... RETURNING``: refresh or create, then read (a
        record a namesake created in between is read as it wrote it: fresh)."""
        now = self.now_expr()
        with self._tx() as conn:
            value = self._refresh_then_read(conn, node_id)
            if value is None:
                conn.execute(
                    self.insert_ignore(nodes).values(
                        id=node_id, started_at=now, heartbeat_at=now, executors=self.announced.get(node_id)
                    )
                )
                value = conn.scalar(select(nodes.c.heartbeat_at).where(nodes.c.id == node_id))
        assert isinstance(value, datetime)
        return value

    @transient_retry
    def register_node(self, node_id: str, instance: str, live_within: float) -> NodeRecord | None:
        now = self.now_expr()
        fresh = nodes.c.heartbeat_at > self._plus_seconds(now, literal(-live_within))
        with self._tx() as conn:
            live = conn.execute(
                select(nodes).where(nodes.c.id == node_id, fresh, nodes.c.instance.is_distinct_from(instance))
            ).first()
            if live is not None:
                return node_record(live)
            conn.execute(delete(nodes).where(nodes.c.id == node_id))
            conn.execute(
                insert(nodes).values(
                    id=node_id,
                    started_at=now,
                    heartbeat_at=now,
                    instance=instance,
                    executors=self.announced.get(node_id),
                )
            )
        return None

    @transient_retry
    def announce_executors(self, node_id: str, executors: Sequence[str]) -> None:
        names = json.dumps(sorted(set(executors)))
        self.announced[node_id] = names
        with self._tx() as conn:
            conn.execute(update(nodes).where(nodes.c.id == node_id).values(executors=names))

    @transient_retry
    def release_dead_node(self, node_id: str, stale_after: float, reason: str) -> int | None:
        now = self.now_expr()
        with self._tx() as conn:
            if not self._lock_if_stale(conn, node_id, stale_after, now):
                return None
            return self._remove_and_release(conn, node_id, reason, now)

    def _lock_if_stale(self, conn: Connection, node_id: str, stale_after: float, now: Any) -> bool:
        """Lock the node's record if its heartbeat is older than ``stale_after``: the judgement
        and the release in one transaction, so a node that beats in between either beat first
        (then nothing is released) or waits for the release to commit."""
        stale = conn.execute(
            select(nodes.c.id)
            .where(nodes.c.id == node_id, nodes.c.heartbeat_at < self._plus_seconds(now, literal(-stale_after)))
            .with_for_update()
        ).first()
        return stale is not None

    def _remove_and_release(self, conn: Connection, node_id: str, reason: str, now: Any) -> int:
        """Release what a dead node held and remove its record; the count released. While
        another session holds one of its schedule rows locked the record stays (stale): the
        next judgement releases the rest."""
        released, locked = self._abandon_claims_of(conn, node_id, reason, now)
        if not locked:
            self._locked_dead.pop(node_id, None)
            conn.execute(delete(nodes).where(nodes.c.id == node_id))
        elif self._locked_dead.get(node_id) != locked:
            self._locked_dead[node_id] = locked
            log.warning(
                "node %s is dead, but %d of its schedule row(s) are locked by another transaction (a stray SELECT "
                "... FOR UPDATE or a long transaction of another database session): released once free",
                node_id,
                locked,
            )
        return released

    @transient_retry
    def nodes(self) -> list[NodeRecord]:
        with self._tx() as conn:
            return [node_record(r) for r in conn.execute(select(nodes).order_by(nodes.c.id))]

    @transient_retry
    def remove_node(self, node_id: str) -> None:
        with self._tx() as conn:
            conn.execute(delete(nodes).where(nodes.c.id == node_id))


def node_record(row: Row[Any]) -> NodeRecord:
    """A ``tickwork_nodes`` row as a :class:`NodeRecord`; ``executors`` ``None`` when the node
    did not publish them (NULL), or when the text is not a JSON list of names (not ours)."""
    names: tuple[str, ...] | None = None
    if row.executors is not None:
        try:
            decoded = json.loads(row.executors)
        except ValueError:
            decoded = None
        if isinstance(decoded, list) and all(isinstance(n, str) for n in decoded):
            names = tuple(decoded)
    return NodeRecord(id=row.id, started_at=row.started_at, heartbeat_at=row.heartbeat_at, executors=names)
