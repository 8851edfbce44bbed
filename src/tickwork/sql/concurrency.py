"""Concurrent runs: admitting a claimed fire under its schedule's ``max_concurrent`` and its
concurrency key's limit, releasing an ``allow`` schedule as its run starts, and writing the ends
of runs that go on without their schedule's claim (docs/claim-protocol.md#concurrent-runs).

Why the counts cannot be exceeded by two nodes at once: the admission runs in one transaction
that first locks the claimed schedule row under its fence (only the claim's holder can admit a
fire of that schedule, and it admits one at a time), then the key's row in
``tickwork_concurrency_keys`` (every admission under that key, on any node, waits for the one
before it to commit), and only then counts the running runs, by the database's state at that
moment (READ COMMITTED on PostgreSQL and MySQL; SQLite transactions are ``BEGIN IMMEDIATE``).
A run stops counting the moment its row leaves ``running``: its end, a dead-node release
(``abandoned``), the hard-timeout reaper.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Text, bindparam, func, literal, select, update

from ..structures import ADMISSION_FENCED, NAMESPACE_KEY_PREFIX, Admission, Finish, RunStatus
from ..structures import cap_error as cap
from .ending import Ending
from .namespacelimits import lock_key
from .retry import transient_retry
from .rowlocks import lock_held_row
from .schema import UTCDateTime, runs, schedules


class Concurrency(Ending):
    """Admitting concurrent fires and ending the runs that outlive their claim."""

    @transient_retry
    def admit(self, node_id: str, admission: Admission) -> str | None:
        claim = admission.claim
        spec = claim.spec
        key = spec.concurrency_key
        with self._tx() as conn:
            # Not waited for while another session holds the row locked (RowLockedError).
            held = lock_held_row(
                conn,
                spec.name,
                schedules.c.id == claim.schedule_id,
                schedules.c.claim_seq == claim.claim_seq,
                schedules.c.claimed_by == node_id,
                schedules.c.state == "running",
            )
            self.statements += 1
            if held is None:
                return None if self._admitted_before(conn, node_id, claim.run_id) else ADMISSION_FENCED
            keyed = self._lock_and_count_key(conn, key, claim.run_id) if key is not None else 0
            running = 0
            if admission.max_running is not None:
                running = int(
                    conn.scalar(
                        select(func.count())
                        .select_from(runs)
                        .where(
                            runs.c.schedule_id == claim.schedule_id,
                            runs.c.status == "running",
                            runs.c.id != claim.run_id,
                        )
                    )
                    or 0
                )
                self.statements += 1
            namespaced = 0
            if admission.namespace_limit is not None:
                namespaced = self._lock_and_count_namespace(conn, spec.namespace, claim.run_id)
            refused = admission.refusal(running, keyed, namespaced)
            if refused is not None:
                return refused
            conn.execute(
                update(runs)
                .where(runs.c.id == claim.run_id, runs.c.status == "running")
                # It starts now, once admitted (not when it was claimed): the history's start
                # and end times then never show more runs at once than the bounds allow.
                # The empty key marks a run admitted without one (what _admitted_before reads).
                .values(concurrency_key=key or "", started_at=self.now_expr())
            )
            self.statements += 1
            if admission.release:
                self._release_started(conn, node_id, admission)
        return None

    def _admitted_before(self, conn: Connection, node_id: str, run_id: int | None) -> bool:
        """Whether this very admission committed before (its answer was lost, and the transient
        retry runs it again after its release): the run is ours, running and admitted."""
        found = conn.scalar(
            select(runs.c.id).where(
                runs.c.id == run_id,
                runs.c.node == node_id,
                runs.c.status == "running",
                runs.c.concurrency_key.is_not(None),
            )
        )
        self.statements += 1
        return found is not None

    def _lock_and_count_key(self, conn: Connection, key: str, run_id: int | None) -> int:
        """Lock the key's row (created on first use) and count the other running runs admitted
        under it."""
        lock_key(self, conn, key)
        count = conn.scalar(
            select(func.count())
            .select_from(runs)
            .where(runs.c.concurrency_key == key, runs.c.status == "running", runs.c.id != run_id)
        )
        self.statements += 1
        return int(count or 0)

    def _lock_and_count_namespace(self, conn: Connection, namespace: str, run_id: int | None) -> int:
        """Lock the namespace's key row and count the other running runs of its schedules that
        were admitted (every fire of a namespace with ``max_concurrent`` is)."""
        lock_key(self, conn, NAMESPACE_KEY_PREFIX + namespace)
        count = conn.scalar(
            select(func.count())
            .select_from(runs.join(schedules, schedules.c.id == runs.c.schedule_id))
            .where(
                schedules.c.namespace == namespace,
                runs.c.status == "running",
                runs.c.concurrency_key.is_not(None),
                runs.c.id != run_id,
            )
        )
        self.statements += 1
        return int(count or 0)

    def _release_started(self, conn: Connection, node_id: str, admission: Admission) -> None:
        """The release of an ``allow`` schedule as its run starts: idle, its next fire stored,
        the fires passed over recorded; the run row carries the run from here on."""
        claim = admission.claim
        conn.execute(
            update(schedules)
            .where(
                schedules.c.id == claim.schedule_id,
                schedules.c.claim_seq == claim.claim_seq,
                schedules.c.state == "running",
            )
            .values(**self.release_values(bindparam("b_next", admission.next_fire, type_=UTCDateTime)))
        )
        if admission.skipped:
            conn.execute(
                self.insert_ignore(runs),
                [
                    {
                        "schedule_id": claim.schedule_id,
                        "scheduled_for": at,
                        "attempt": 1,
                        "claim_seq": claim.claim_seq,
                        "node": node_id,
                        "status": RunStatus.SKIPPED.value,
                        "finished_at": claim.claimed_at,
                        "error": cap(reason),
                        "version": claim.version,
                    }
                    for at, reason in admission.skipped
                ],
            )
        self._notify(conn)
        self.statements += 1 + bool(admission.skipped)

    @transient_retry
    def end_detached(self, node_id: str, finishes: Sequence[Finish]) -> list[bool]:
        if not finishes:
            return []
        landed: list[bool] = []
        with self._tx() as conn:
            for f in finishes:
                landed.append(self._end_detached_one(conn, node_id, f))
            self.statements += len(finishes)
            done = [f for f, ok in zip(finishes, landed, strict=True) if ok]
            if done:
                # pause_after_failures and max_runs count the end as a fenced finish does.
                self._count_ends(conn, done, {f.claim.schedule_id for f in done})
        return landed

    def _end_detached_one(self, conn: Connection, node_id: str, f: Finish) -> bool:
        values: dict[str, Any] = {
            "status": f.outcome.status.value,
            "error": cap(f.outcome.error),
            "finished_at": self.now_expr() if f.finished_at is None else f.finished_at,
        }
        if f.started_at is not None:
            values["started_at"] = f.started_at
        mine = (runs.c.id == f.claim.run_id, runs.c.node == node_id)
        ended = conn.execute(update(runs).where(*mine, runs.c.status == "running").values(**values)).rowcount
        if ended:
            return True
        # Recorded abandoned meanwhile (its node was declared dead): that status stays, the
        # run's own end is noted after the reason.
        note = f"finished ({f.outcome.status.value}) after its end was recorded" + (
            f": {f.outcome.error}" if f.outcome.error else ""
        )
        conn.execute(
            update(runs)
            .where(*mine)
            .values(
                error=func.coalesce(runs.c.error + literal("\n", Text), literal("", Text)) + literal(cap(note), Text)
            )
        )
        return False
