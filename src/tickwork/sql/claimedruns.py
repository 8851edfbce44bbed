"""The run rows of the fires a claim won, and the claims read back from the won rows.

A claim's transaction inserts the ``running`` history row of each fire it took (invariant 1 of
docs/claim-protocol.md: the history's uniqueness on (schedule, fire time, attempt) makes a fire
that already has one come back without a run id), unless the claim statement wrote them itself
(:attr:`~tickwork.sql.claiming.Claiming.claim_records_runs`). A store plugin may replace
:meth:`ClaimedRuns._insert_runs` or :meth:`ClaimedRuns._record_runs` with a batched form of its
database (docs/plugins.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, select, tuple_

from ..structures import Claim, ScheduleSpec
from .rows import spec_from_row
from .schema import runs
from .storecore import SQLCore


class ClaimedRuns(SQLCore):
    """The run rows of claimed fires (:meth:`_record_runs`) and the :class:`Claim` of each row."""

    def _record_runs(
        self, conn: Connection, node_id: str, rows: Sequence[Mapping[Any, Any]], run_ids: dict[int, int]
    ) -> list[Claim]:
        """Insert the running run rows of claimed ``rows`` that have none in ``run_ids`` yet."""
        need = [r for r in rows if r["id"] not in run_ids]
        if need:
            params = [
                {
                    "schedule_id": r["id"],
                    "scheduled_for": r["next_fire"],
                    "attempt": 1,
                    "claim_seq": r["claim_seq"],
                    "node": node_id,
                    # A fire claimed ahead of its time has not started yet.
                    "started_at": None if r["next_fire"] > r["claimed_at"] else r["claimed_at"],
                    "status": "running",
                    "version": r["version"],
                }
                for r in need
            ]
            run_ids = run_ids | self._insert_runs(conn, params)
            self.statements += 1
        return self._claims(rows, run_ids)

    def _claims(self, rows: Sequence[Mapping[Any, Any]], run_ids: dict[int, int]) -> list[Claim]:
        claims = []
        for r in rows:
            claims.append(
                Claim.stored(
                    schedule_id=r["id"],
                    spec=self._spec(r),
                    scheduled_for=r["next_fire"],
                    claim_seq=r["claim_seq"],
                    claimed_at=r["claimed_at"],
                    run_id=run_ids.get(r["id"]),
                    version=r["version"],
                )
            )
        claims.sort(key=lambda c: (c.scheduled_for, c.schedule_id))
        return claims

    def _spec(self, r: Mapping[Any, Any]) -> ScheduleSpec:
        """The row's spec, cached by (id, updated_at): a definition only changes with updated_at,
        and building a spec per fire was a measurable share of a node's CPU."""
        key = (r["id"], r["updated_at"])
        spec = self._specs.get(key)
        if spec is None:
            if len(self._specs) > 100_000:
                self._specs.clear()
            spec = self._specs[key] = spec_from_row(r)
        return spec

    def _insert_runs(self, conn: Connection, params: list[dict[str, Any]]) -> dict[int, int]:
        """Insert running run rows, skipping (schedule, fire, attempt) already recorded; return
        ``{schedule_id: run_id}`` of those inserted. executemany: one cached statement that
        SQLAlchemy batches into multi-row INSERTs. With ``RETURNING``, the rows returned are
        matched to ``params`` by their fence (claim_seq) and node: MariaDB's returns a skipped
        row too, as it already was (its older claim_seq), where PostgreSQL and SQLite return only
        the rows inserted. Without ``RETURNING`` (MySQL), the insert is followed by a read of the
        rows written under these claims' fence tokens."""
        node = params[0]["node"]
        keys = {(p["schedule_id"], p["scheduled_for"], p["attempt"], p["claim_seq"]) for p in params}
        key_columns = (runs.c.schedule_id, runs.c.scheduled_for, runs.c.attempt, runs.c.claim_seq)
        if self.features.insert_returning:
            found = conn.execute(self.insert_ignore(runs).returning(runs.c.id, *key_columns, runs.c.node), params)
        else:
            conn.execute(self.insert_ignore(runs), params)
            found = conn.execute(
                select(runs.c.id, *key_columns, runs.c.node).where(tuple_(*key_columns).in_(list(keys)))
            )
            self.statements += 1
        return {
            r.schedule_id: r.id
            for r in found
            if r.node == node and (r.schedule_id, r.scheduled_for, r.attempt, r.claim_seq) in keys
        }
