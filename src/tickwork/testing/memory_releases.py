"""What a node leaves behind, given back in a :class:`~tickwork.testing.MemoryStore`: its claims
at a restart or a stop (:meth:`release_node`), the claims its engine no longer tracks
(:meth:`release_untracked`), a dead node's (:meth:`release_dead_node`) and claims past their hard
timeout (:meth:`reap_expired`); each as docs/claim-protocol.md says, under the store's lock."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from ..structures import Claim, RunStatus, ScheduleState
from .memory_starts import MemoryStarts


class MemoryReleases(MemoryStarts):
    """:meth:`release_node`, :meth:`release_untracked`, :meth:`release_dead_node` and :meth:`reap_expired`."""

    def release_node(self, node_id: str, reason: str) -> int:
        with self._tx() as now:
            # Fires claimed ahead and never started are given back, not abandoned: the fenced
            # start keeps the node from starting them now, so the next claim runs them.
            self._give_back_unstarted_of(node_id)
            for run in self._runs.values():
                if run.node == node_id and run.status is RunStatus.RUNNING:
                    run.end(RunStatus.ABANDONED, reason, now)
            held = [r for r in self._schedules.values() if r.claimed_by == node_id and r.state is ScheduleState.RUNNING]
            for row in held:
                row.unhold()
            if held:
                self._notify()
            return len(held)

    def release_untracked(self, node_id: str, tracked: Sequence[Claim], reason: str) -> int:
        keep = {(c.schedule_id, c.claim_seq) for c in tracked}
        with self._tx() as now:
            self._give_back_unstarted_of(node_id, keep)
            stranded = [
                r
                for r in self._schedules.values()
                if r.claimed_by == node_id and r.state is ScheduleState.RUNNING and (r.id, r.claim_seq) not in keep
            ]
            fences = {(r.id, r.claim_seq) for r in stranded}
            for run in self._runs.values():
                if (
                    run.node == node_id
                    and run.status is RunStatus.RUNNING
                    and (run.schedule_id, run.claim_seq) in fences
                ):
                    run.end(RunStatus.ABANDONED, reason, now)
            for row in stranded:
                row.unhold()
            if stranded:
                self._notify()
            return len(stranded)

    def release_dead_node(self, node_id: str, stale_after: float, reason: str) -> int | None:
        with self._tx() as now:
            known = self._nodes.get(node_id)
            if known is None or known.heartbeat_at >= now - timedelta(seconds=stale_after):
                return None
            self._nodes.pop(node_id, None)
        return self.release_node(node_id, reason)

    def reap_expired(self, grace_seconds: float) -> int:
        with self._tx() as now:
            expired = [
                r
                for r in self._schedules.values()
                if r.state is ScheduleState.RUNNING
                and r.claimed_at is not None
                and r.claimed_at + r.spec.timeout + timedelta(seconds=grace_seconds) < now
            ]
            for row in expired:
                row.unhold()
                for run in self._runs.values():
                    if run.schedule_id == row.id and run.claim_seq == row.claim_seq and run.status is RunStatus.RUNNING:
                        error = f"hard timeout: claim not ended within timeout + {grace_seconds:g}s grace"
                        run.end(RunStatus.TIMED_OUT, error, now)
            if expired:
                self._notify()
            return len(expired)
