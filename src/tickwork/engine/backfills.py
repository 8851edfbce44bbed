"""Running backfilled fires (``tickwork jobs backfill``): a housekeeping duty takes the queued
fire times of the schedules this node owns and hands each to its schedule's executor as a normal
run of that fire; its end is written when the executor reports it (docs/cluster.md#backfill)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from ..abc import Executor, Membership, Store
from ..structures import Claim, JobCall, Outcome, RunStatus
from .settings import MAX_WAIT, EngineSettings

log = logging.getLogger("tickwork.engine")

#: Most backfilled runs one node has in flight at once: a backfill of a long range runs as a
#: steady trickle beside the schedules' own fires, not as one burst.
MAX_BACKFILLS_IN_FLIGHT = 8


class BackfillRunner:
    """Takes queued backfill times of owned schedules and runs them (one duty, any thread)."""

    def __init__(
        self, store: Store, executors: Mapping[str, Executor], membership: Membership, settings: EngineSettings
    ) -> None:
        self.store = store
        self.executors = executors
        self.membership = membership
        self.settings = settings
        self._lock = threading.Lock()
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    def run(self) -> int:
        """Take and start what fits (the store keeps each backfill's overlap: a ``buffer_all``
        fire is taken only once the schedule's previous run has ended); returns how many
        backfilled runs this node has in flight after the pass, so that housekeeping looks again
        within a second while any runs (its end may let the next buffered fire start)."""
        room = MAX_BACKFILLS_IN_FLIGHT - self.in_flight
        if room <= 0 or not self.membership.healthy():
            return self.in_flight
        node = self.settings.node_id
        claims = self.store.take_backfills(node, limit=room, buckets=self.membership.owned_buckets())
        for claim in claims:
            self._start(claim)
        return self.in_flight or len(claims)

    def _start(self, claim: Claim) -> None:
        executor = self.executors.get(claim.spec.executor)
        if executor is None:
            error = f"not run: executor {claim.spec.executor!r} is not configured on node {self.settings.node_id}"
            self.store.end_attempt(claim, Outcome(RunStatus.FAILED, error=error))
            return
        call = JobCall.for_claim(
            claim, timeout=min(claim.spec.timeout.total_seconds(), MAX_WAIT), node_id=self.settings.node_id
        )
        with self._lock:
            self._in_flight += 1
        log.info("backfill: running %s for %s", claim.spec.name, claim.scheduled_for.isoformat())
        try:
            executor.submit(call, lambda outcome: self._done(claim, outcome))
        except Exception as exc:  # an executor bug must not leave the run open
            log.exception("executor %s refused backfilled run %s", claim.spec.executor, claim.run_id)
            self._done(claim, Outcome(RunStatus.FAILED, error=f"executor refused the run: {exc}"))

    def _done(self, claim: Claim, outcome: Outcome) -> None:
        """The executor's report (any thread): the run's end, by the database clock."""
        try:
            self.store.end_attempt(claim, outcome)
        except Exception:
            log.exception("backfill: could not record the end of run %s of %s", claim.run_id, claim.spec.name)
        finally:
            with self._lock:
                self._in_flight -= 1
