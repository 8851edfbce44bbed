"""The fenced start of fires claimed ahead and the takeover of those not started in time, as
plain Python (:class:`~tickwork.testing.MemoryStore`'s part; docs/claim-protocol.md, invariant 4).

A schedule is claimed and not started while it is ``running`` with its claim time before its
fire time; a start sets the claim time to the clock (at or after the fire time). The start and the
takeover each check the other's condition under the one lock, so exactly one of them wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from ..structures import Claim, RunStatus, ScheduleState
from .memory_rows import ScheduleRow
from .memory_tables import MemoryTables


def unstarted(row: ScheduleRow) -> bool:
    """Claimed ahead of its fire time and not started since."""
    return (
        row.state is ScheduleState.RUNNING
        and row.claimed_at is not None
        and row.next_fire is not None
        and row.claimed_at < row.next_fire
    )


class MemoryStarts(MemoryTables):
    """:meth:`start_held`, :meth:`take_over_unstarted` and :meth:`refresh_heartbeat`."""

    def start_held(self, node_id: str, claims: Sequence[Claim], grace: float, lead: float = 0.0) -> list[bool]:
        with self._tx() as now:
            started = []
            for claim in claims:
                row = self._held(claim)
                ok = (
                    row is not None
                    and row.claimed_by == node_id
                    and unstarted(row)
                    # Not redefined since the claim (as tickwork.sql.starting._startable).
                    and not row.retimed
                    and row.next_fire is not None
                    # Due within the lead, never past the deadline after which others take it over.
                    and row.next_fire <= now + timedelta(seconds=lead)
                    and now <= row.next_fire + timedelta(seconds=grace)
                )
                if ok and row is not None and row.next_fire is not None:
                    # Recorded as of its fire time when started ahead: never unstarted again.
                    row.claimed_at = max(now, row.next_fire)
                started.append(ok)
            return started

    def take_over_unstarted(self, grace: float) -> int:
        with self._tx() as now:
            late = [
                r
                for r in self._schedules.values()
                if unstarted(r) and r.next_fire is not None and r.next_fire + timedelta(seconds=grace) < now
            ]
            self._give_back(late)
            return len(late)

    def _give_back(self, rows: Iterable[ScheduleRow]) -> None:
        """Make ``rows`` idle (still due at their fire time) and delete their unstarted run rows."""
        fences = {(r.id, r.claim_seq) for r in rows}
        for row in rows:
            row.unhold()
        for run in list(self._runs.values()):
            if (
                (run.schedule_id, run.claim_seq) in fences
                and run.status is RunStatus.RUNNING
                and run.attempt == 1
                and run.started_at is None
            ):
                self._delete_run(run.id)
        if fences:
            self._notify()

    def _give_back_unstarted_of(self, node_id: str, keep: set[tuple[int, int]] | None = None) -> None:
        """Give back the fires ``node_id`` claimed ahead and never started (but those in ``keep``)."""
        self._give_back(
            [
                r
                for r in self._schedules.values()
                if r.claimed_by == node_id and unstarted(r) and (keep is None or (r.id, r.claim_seq) not in keep)
            ]
        )

    def refresh_heartbeat(self, node_id: str) -> datetime | None:
        with self._tx():
            if node_id not in self._nodes:
                return None
            return self.heartbeat(node_id)
