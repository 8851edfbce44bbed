"""A start window's round on MySQL/MariaDB (docs/claim-protocol.md#start-windows): the fenced
start, the takeover riding on it and the ends gathered meanwhile, in one transaction whose one
locking read finds the rows of all three.

Neither database has UPDATE ... RETURNING, so each part is a locking read, then writes by key.
Made in turn, a round was three transactions and three locking reads (the start's, the
takeover's, the ends' fences). Here the database judges every condition in one read, on one
clock (``NOW(6)`` is fixed for the statement): which held fires are startable, which claims are
overdue, and the fences of the ends' rows; each is the same condition as in its own statement.
Every row it returns is locked until the commit, so the writes by key that follow need not check
again, exactly as each part's own read-then-update did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, bindparam, case, literal, or_, select, update

from tickwork.sql.retry import transient_retry
from tickwork.sql.rounds import OneTransactionRound
from tickwork.sql.rows import UNHELD
from tickwork.sql.schema import schedules
from tickwork.sql.serverstore import ServerStore
from tickwork.structures import Claim, Finish, StartRound


class MySQLRoundTrips(OneTransactionRound):
    """A start window's start, takeover and ends in one transaction with one locking read."""

    def _round_read(self, take_over: bool, ends: bool) -> Select[Any]:
        """The round's locking read. Its rows: the held fires startable now (``start`` 1), with
        ``take_over`` the unstarted claims past their deadline (``overdue`` 1), with ``ends``
        the rows of the ends' schedules (``f_ids``), each with its fence (``claim_seq``,
        ``state``). A row another session holds locked is passed over (SKIP LOCKED), as by
        each part's own read: a start refused for now (asked again before its deadline), a
        claim left to the next takeover, an end asked again."""
        startable = self._startable()
        columns: list[Any] = [
            schedules.c.id,
            schedules.c.claim_seq,
            schedules.c.state,
            schedules.c.name,
            case((startable, 1), else_=0).label("start"),
        ]
        wanted = [startable]
        if take_over:
            overdue = self._overdue()
            columns.append(case((overdue, 1), else_=0).label("overdue"))
            wanted.append(overdue)
        else:
            columns.append(literal(0).label("overdue"))
        if ends:
            wanted.append(schedules.c.id.in_(bindparam("f_ids", expanding=True)))
        query = select(*columns).where(or_(*wanted))
        if not take_over:
            # Only rows named by key: a primary key range, not a scan (the takeover's condition
            # names no key, and its own read scans the running rows as this one then does).
            query = query.where(schedules.c.id.in_(bindparam("r_ids", expanding=True)))
        return query.with_for_update(skip_locked=True)

    def start_round(
        self,
        node_id: str,
        claims: Sequence[Claim],
        grace: float,
        lead: float = 0.0,
        *,
        take_over: bool = False,
        finishes: Sequence[Finish] = (),
    ) -> StartRound:
        if not claims:
            # Nothing to start: the shared store's turns (the takeover, the ends) do the rest.
            return ServerStore.start_round(self, node_id, claims, grace, lead, take_over=take_over, finishes=finishes)
        return super().start_round(node_id, claims, grace, lead, take_over=take_over, finishes=finishes)

    @transient_retry
    def _round_once(
        self,
        node_id: str,
        claims: Sequence[Claim],
        grace: float,
        lead: float,
        take_over: bool,
        finishes: Sequence[Finish],
    ) -> tuple[tuple[bool, ...], list[str], list[bool | None]]:
        params: dict[str, Any] = {**self._fence_params(claims), "s_node": node_id, "s_grace": grace, "s_lead": lead}
        end_ids = [f.claim.schedule_id for f in finishes]
        if take_over:
            params["t_grace"] = grace
        else:
            params["r_ids"] = [c.schedule_id for c in claims] + end_ids
        if end_ids:
            params["f_ids"] = end_ids
        ends = bool(end_ids)
        with self._tx() as conn:
            rows = conn.execute(
                self._statement(f"mysql_round/{take_over}/{ends}", lambda: self._round_read(take_over, ends)), params
            ).all()
            self.statements += 1
            started = {r.id for r in rows if r.start}
            overdue = [r for r in rows if r.overdue]
            if started:
                conn.execute(
                    update(schedules).where(schedules.c.id.in_(sorted(started))).values(claimed_at=self._started_at())
                )
                self.statements += 1
            if overdue:
                conn.execute(update(schedules).where(schedules.c.id.in_([r.id for r in overdue])).values(**UNHELD))
                self.statements += 1
                self.forget_unstarted_runs(conn, [(r.id, r.claim_seq) for r in overdue])
                self._notify(conn)
            ended: list[bool | None] = []
            if finishes:
                wanted = set(end_ids)
                read = {r.id: (r.claim_seq, r.state) for r in rows if r.id in wanted}
                busy = self.locked_elsewhere(conn, [i for i in end_ids if i not in read])
                landed = self._release_and_end_read(conn, finishes, read)
                ended = self._settle_ends(conn, node_id, finishes, landed, busy)
        return tuple(c.schedule_id in started for c in claims), [str(r.name) for r in overdue], ended
