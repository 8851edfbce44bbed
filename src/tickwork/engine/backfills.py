"""Taking backfilled fires (``tickwork jobs backfill``): a housekeeping duty takes the queued fire
times of the schedules this node owns and hands them to the engine's run path (:class:`.runs.Runs`)
like any claim: the same fence, hard deadline, retries, end batching and listener calls
(docs/cluster.md#backfill). What differs is in the claim (``Claim.backfill``): its run holds no
claim of its schedule, so its end is written with :meth:`Store.end_attempt` and plans no next fire.

Pace: the queue is looked at again as soon as one of this node's backfilled runs has its end
recorded (or its fire queued again for a retry): the loop's pass that writes the end takes the
next fire, after the schedules' own due fires (:meth:`BackfillRunner.run_if_wanted`). The
housekeeping duty's look every second (while backfilled runs are in flight, else every
``reap_interval``) is only the fallback for what this node cannot see end: a backfill queued by the
admin API, a buffered fire waiting for a run of another node or for the schedule's own run."""

from __future__ import annotations

import logging

from ..abc import Membership, Store
from .runs import Runs
from .settings import EngineSettings

log = logging.getLogger("tickwork.engine")

#: Most backfilled runs one node has in flight at once (running or waiting for a retry): a
#: backfill of a long range runs as a steady trickle beside the schedules' own fires, not as one burst.
MAX_BACKFILLS_IN_FLIGHT = 8


class BackfillRunner:
    """Takes queued backfill times of owned schedules and dispatches them (a duty of the loop's
    thread, as :meth:`Runs.dispatch` wants)."""

    def __init__(self, store: Store, runs: Runs, membership: Membership, settings: EngineSettings) -> None:
        self.store = store
        self.runs = runs
        self.membership = membership
        self.settings = settings
        # Set when a backfilled run of this node had its end recorded: a slot is free, and a
        # buffer_all fire waiting for that run may start now. Loop thread only.
        self._wanted = False

    def ended(self) -> None:
        """A backfilled run of this node had its end recorded (or its fire was queued again for
        a retry): look at the queue in this pass, not at the next housekeeping turn."""
        self._wanted = True

    @property
    def wanted(self) -> bool:
        """Whether a backfilled run ended since the queue was last looked at."""
        return self._wanted

    def run_if_wanted(self) -> int:
        """Take and start what fits if a backfilled run ended since the last look (see
        :meth:`run`); how many fires were taken."""
        return self._take() if self._wanted else 0

    @property
    def in_flight(self) -> int:
        """Backfilled runs this engine has not ended yet: running, or ended with their end not
        written yet (until then the store still counts them running)."""
        runs = self.runs
        waiting = runs.ends.claims()
        return sum(1 for f in runs.in_flight.values() if f.claim.backfill) + sum(1 for c in waiting if c.backfill)

    def run(self) -> int:
        """Take and start what fits (the store keeps each backfill's overlap: a ``buffer_all``
        fire is taken only once the schedule's previous run has ended); returns how many
        backfilled runs this node has in flight after the pass, so that housekeeping looks again
        within a second while any runs (the fallback for ends this node does not see)."""
        taken = self._take()
        return self.in_flight or taken

    def _take(self) -> int:
        room = MAX_BACKFILLS_IN_FLIGHT - self.in_flight
        if room <= 0 or not self.membership.healthy():
            self._wanted = False  # the next end asks again
            return 0
        node = self.settings.node_id
        claims = self.store.take_backfills(
            node, limit=room, buckets=self.membership.owned_buckets(), namespaces=self.settings.namespaces
        )
        # Only once the store answered: a take that failed (an outage) is tried again next pass.
        self._wanted = False
        for claim in claims:
            log.info("backfill: running %s for %s", claim.spec.name, claim.scheduled_for.isoformat())
        self.runs.dispatch(claims)
        return len(claims)
