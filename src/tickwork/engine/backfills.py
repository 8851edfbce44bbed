"""Taking backfilled fires (``tickwork jobs backfill``): a housekeeping duty takes the queued fire
times of the schedules this node owns and hands them to the engine's run path (:class:`.runs.Runs`)
like any claim: the same fence, hard deadline, retries, end batching and listener calls
(docs/cluster.md#backfill). What differs is in the claim (``Claim.backfill``): its run holds no
claim of its schedule, so its end releases nothing and plans no next fire: it is written as
:meth:`Store.end_attempt` writes one, carried by the next take (below).

Pace: the queue is looked at again as soon as one of this node's backfilled runs ends (or its
fire is queued again for a retry): the loop's pass that collects the end takes the next fire,
after the schedules' own due fires (:meth:`BackfillRunner.run_if_wanted`), and the take carries
the ends gathered (``Store.take_backfills(ends=...)``): one transaction ends the runs and takes
the slots they free, a buffered fire's successor included. The
housekeeping duty's look every second (while backfilled runs are in flight, else every
``reap_interval``) is only the fallback for what this node cannot see end: a backfill queued by the
admin API, a buffered fire waiting for a run of another node or for the schedule's own run."""

from __future__ import annotations

import logging

from ..abc import Membership, Store
from ..structures import Finish
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
        :meth:`run`), carrying the ends of backfilled runs gathered meanwhile; how many fires
        were taken."""
        carried = self.runs.ends.take_backfill_ends()
        return self._take(carried) if self._wanted or carried else 0

    def write_ends(self) -> None:
        """Write the gathered ends of backfilled runs without taking (a pass that claimed a
        full batch of due fires: live work first); the next pass takes."""
        carried = self.runs.ends.take_backfill_ends()
        if carried:
            self._take(carried, take=False)

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
        taken = self._take(self.runs.ends.take_backfill_ends())
        return self.in_flight or taken

    def _take(self, carried: list[Finish], *, take: bool = True) -> int:
        """One store round trip: write ``carried`` (ends of backfilled runs, taken from the end
        writer) and take what fits in the same transaction, so that a buffered fire's successor
        starts in the transaction that ends it (docs/cluster.md#backfill)."""
        # Counted without the carried ends: the take writes them before it counts.
        room = MAX_BACKFILLS_IN_FLIGHT - self.in_flight
        takes = take and room > 0 and self.membership.healthy()
        if not takes and not carried:
            self._wanted = False  # the next end asks again
            return 0
        node = self.settings.node_id
        try:
            claims = self.store.take_backfills(
                node,
                limit=room if takes else 0,
                buckets=self.membership.owned_buckets() if takes else None,
                namespaces=self.settings.namespaces,
                ends=carried,
            )
        except BaseException:
            self.runs.ends.put_back(carried)  # an end is never lost: written next pass
            raise
        # Reported as written (which asks for a take: a slot freed) ...
        self.runs.ends.backfills_written(carried)
        if takes:
            # ... but a take after the ends, in their transaction, has seen that slot. Only
            # once the store answered: a take that failed (an outage) is tried again next pass.
            self._wanted = False
        for claim in claims:
            log.info("backfill: running %s for %s", claim.spec.name, claim.scheduled_for.isoformat())
        self.runs.dispatch(claims)
        return len(claims)
