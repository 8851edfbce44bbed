"""What a :class:`~tickwork.abc.Store` keeps and counts for schedule health: the health state last
announced per schedule (``tickwork_health_changed``; docs/observability.md#health-changes) and
the whole failure streak of a schedule.

Not abstract, so a third-party store written before it keeps working: the defaults are correct
for one process (the announcements live in the store object, so a restart announces again and
two nodes do not share them) and read the history to count. The SQL store keeps the
announcements in ``tickwork_health_announcements`` and counts with one indexed query.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ..structures import FAILING, Announcement, AnnouncementClaim, RunRecord, RunStatus, Schedule

_FIRST_USE = threading.Lock()


class HealthRecords:
    """The health role of a store (a mixin of :class:`~tickwork.abc.Store`)."""

    # The in-memory default's announcements, made on first use (a store defines no __init__ here).
    _announced_here: dict[int, Announcement]
    _announced_lock: threading.Lock

    if TYPE_CHECKING:  # provided by the store's other roles

        def now(self) -> datetime: ...

        def find_runs(
            self,
            *,
            schedule: str | None = None,
            status: Sequence[RunStatus] | None = None,
            since: datetime | None = None,
            until: datetime | None = None,
            node: str | None = None,
            limit: int = 100,
        ) -> list[RunRecord]: ...

        def list_schedules(self, *, module: str | None = None, namespace: str | None = None) -> list[Schedule]: ...

    def count_failures_since(self, schedule: Schedule, success: RunRecord | None) -> int:
        """The failed or timed-out runs of ``schedule`` after its run ``success`` (in the
        history's order: scheduled time, then attempt), or all of them when ``success`` is
        ``None``: the schedule's whole failure streak (health reads the first runs itself; this
        is asked only when those hold no success)."""
        failed = self.find_runs(schedule=schedule.name, status=sorted(FAILING), limit=2**62)
        if success is None:
            return len(failed)
        mark = (success.scheduled_for, success.attempt)
        return sum(1 for run in failed if (run.scheduled_for, run.attempt) > mark)

    def announcements(self, schedule_ids: Sequence[int]) -> dict[int, Announcement]:
        """The last announcement of each of these schedules that has one, by schedule id."""
        with self._announced_guard():
            return {i: self._announced_here[i] for i in schedule_ids if i in self._announced_here}

    def all_announcements(self) -> dict[int, Announcement]:
        """The last announcement of every schedule that has one, by schedule id: what the health
        sweep reads before anything it assesses, in one read.

        The default asks :meth:`announcements` for the ids of every stored schedule, so a store
        that keeps its announcements elsewhere stays correct without overriding this; the SQL
        store reads its announcements table alone, without the schedules.
        """
        return self.announcements([s.id for s in self.list_schedules()])

    def claim_announcements(self, claims: Sequence[AnnouncementClaim]) -> list[bool]:
        """Record each claim only if the schedule's announcement is still the one the claim read
        (``before``: its version; ``None``: none yet), moving the version on; in one
        transaction. A claim that did not land was made by another node (or the schedule is
        gone): the caller announces only what landed, so two nodes never both announce.

        :return: for each claim, whether it landed
        """
        landed: list[bool] = []
        with self._announced_guard():
            for claim in claims:
                current = self._announced_here.get(claim.schedule_id)
                if (current is None) != (claim.before is None) or (
                    current is not None and claim.before is not None and current.version != claim.before.version
                ):
                    landed.append(False)
                    continue
                since = claim.before.since if claim.repeat and claim.before is not None else claim.at
                version = 0 if current is None else current.version + 1
                self._announced_here[claim.schedule_id] = Announcement(
                    claim.schedule_id, claim.state, claim.alerting, since, claim.at, version
                )
                landed.append(True)
        return landed

    def _announced_guard(self) -> threading.Lock:
        with _FIRST_USE:
            if not hasattr(self, "_announced_lock"):
                self._announced_lock = threading.Lock()
                self._announced_here = {}
        return self._announced_lock
