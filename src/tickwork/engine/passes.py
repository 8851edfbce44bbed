"""One pass of the loop: its steps in their order, and the claim that feeds the executors.

The order is the protocol's (docs/architecture.md#the-engine): ended runs are gathered before
the housekeeping renews what they held, held fires and retries due now start before the ends are
written (no fire waits on a round trip), and nothing starts or is claimed while the node is
unsure of its membership. The loop (``loop.py``) decides when a pass runs and what a failed one
costs; :class:`Pass` is what it does.
"""

from __future__ import annotations

from collections.abc import Callable

from ..abc import Membership, Store
from .backfills import BackfillRunner
from .claimsize import ClaimSize
from .clock import DatabaseClock
from .ends import EndWriter
from .failover import FencedStarts, Rejoins
from .gate import ClaimGate
from .housekeeping import Housekeeping
from .listener import EngineListener
from .pacing import Pacing
from .retries import RetryQueue
from .runs import Runs
from .settings import EngineSettings
from .watch import PassWatch


class Pass:
    """The steps of one pass over the engine's parts; it holds no state of its own."""

    def __init__(
        self,
        *,
        store: Store,
        settings: EngineSettings,
        membership: Membership,
        clock: DatabaseClock,
        listener: Callable[[], EngineListener],
        gate: ClaimGate,
        claim_size: ClaimSize,
        runs: Runs,
        starts: FencedStarts,
        retries: RetryQueue,
        ends: EndWriter,
        housekeeping: Housekeeping,
        rejoins: Rejoins,
        pacing: Pacing,
        backfills: BackfillRunner,
        watch: PassWatch,
    ) -> None:
        self.store = store
        self.settings = settings
        self.membership = membership
        self.clock = clock
        self.listener = listener
        self.gate = gate
        self.claim_size = claim_size
        self.runs = runs
        self.starts = starts
        self.retries = retries
        self.ends = ends
        self.housekeeping = housekeeping
        self.rejoins = rejoins
        self.pacing = pacing
        self.backfills = backfills
        self.watch = watch

    def run(self) -> bool:
        """Gather completed runs, housekeeping, start held fires and retries that are due, write
        the gathered ends whose time has come, claim and dispatch what is due.

        :return: True when a full batch was claimed (more may be due right away)
        """
        self.rejoins.check()
        self.runs.expire_overdue()
        self.runs.finish_completed()
        with self.watch.step("housekeeping (renew, reap, reconcile, takeover)"):
            self.housekeeping.run_due(busy=self.pacing.busy())
        # A node unsure of its membership starts nothing, held fires included: others may soon
        # declare it dead and release its claims (docs/claim-protocol.md, bounds).
        healthy = self.membership.healthy()
        if healthy:
            # Before writing ends: a fire due now must not wait for a round trip.
            self.starts.start_due()
            with self.watch.step("starting retries"):
                self.retries.start_due(self.runs.start_retry)
        with self.watch.step(f"writing {self.ends.backlog} run end(s)"):
            # Backfilled runs' ends wait for this pass's take, which carries them (healthy only:
            # an unsure node takes nothing, so they are written here).
            self.runs.write_ends(keep_backfills=healthy)
        if not healthy:
            return False
        busy = self.claim_due()
        with self.watch.step("taking backfilled fires"):
            if not busy:
                # After the schedules' own due fires, and only when they left no backlog (a full
                # batch): live work first, a backfill takes what is left (docs/cluster.md#backfill).
                self.backfills.run_if_wanted()
            else:
                self.backfills.write_ends()
        return busy

    def claim_due(self) -> bool:
        """Claim and dispatch what is due, as much as there is room for; True when a full batch
        was claimed."""
        size = self.claim_size.next()
        room = self.pacing.room(size)
        if room <= 0 or not self.gate.is_open():
            return False
        limit = min(size, room)
        claim_started = self.clock.monotonic()
        # A store that reads the next due time in a drained claim saves the read after it.
        note = self.gate.note() if self.store.claim_reads_next_due else None
        with self.watch.step("claiming due fires"):
            claims = self.store.claim_due(
                self.settings.node_id,
                limit=limit,
                buckets=self.membership.owned_buckets(),
                ahead=self.settings.lookahead,
                steal_after=self.settings.steal_after,
                namespaces=self.settings.namespaces,
                **({} if note is None else {"next_due": note}),
            )
        claim_seconds = self.clock.monotonic() - claim_started
        self.listener().claimed(len(claims), claim_seconds)
        self.gate.claimed(len(claims), limit, note)
        if claims:
            self.runs.dispatch(claims)
            # Fires claimed ahead whose time came while the claim's answer travelled.
            self.starts.start_due()
        # A claim that reached ahead of any fire's time (the estimate: no read; none yet counts
        # as ahead, the safe side: the claim does not grow).
        now = self.clock.estimate()
        ahead = bool(claims) and (now is None or any(c.scheduled_for > now for c in claims))
        self.claim_size.claimed(len(claims), limit, claim_seconds, ahead=ahead)
        return len(claims) >= limit
