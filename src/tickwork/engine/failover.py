"""What keeps failover exact on the engine's side: fires claimed ahead start only through the
fenced start, and a node told it was declared dead drops what the others recorded
(docs/claim-protocol.md, "Fenced starts" and "A node declared dead")."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

from ..abc import Membership, Store
from ..structures import Claim
from .ends import EndWriter
from .held import HeldFire, HeldFires
from .retries import RetryQueue
from .runs import Runs
from .watch import PassWatch

log = logging.getLogger("tickwork.engine")


class FencedStarts:
    """Starts the held fires that are due, through one :meth:`Store.start_held` per pass.

    With a ``lead``, the starts of the fires due within it are recorded ahead of their time, so
    that the statement's round trip is not between a fire's time and its run; the granted fires
    wait here and are run at their time by the database clock (never before it), and only while
    the node is healthy and has not been declared dead since (a node that froze meanwhile must
    not run what the others recorded ``abandoned``: it drops them when it learns it).
    """

    def __init__(
        self,
        store: Store,
        node_id: str,
        grace: float,
        lead: float,
        window: float,
        held: HeldFires,
        runs: Runs,
        watch: PassWatch,
        membership: Membership,
        monotonic: Callable[[], float],
    ) -> None:
        self.store = store
        self.node_id = node_id
        self.grace = grace
        self.lead = lead
        self.held = held
        self.runs = runs
        self.watch = watch
        self.membership = membership
        self.window = window
        self._monotonic = monotonic
        self._last_run = -math.inf
        #: Granted ahead of their time, earliest first, each with the membership's rejoin count
        #: when it was granted.
        self._granted: list[tuple[HeldFire, int]] = []

    def start_due(self) -> None:
        until = self.held.seconds_until_next()
        if until is not None and until <= self.lead:
            with self.watch.step("starting fires claimed ahead"):
                granted = self.held.start_due(
                    lambda claims: self.store.start_held(self.node_id, claims, self.grace, self.lead), self.lead
                )
            rejoins = self.membership.rejoins()
            self._granted.extend((fire, rejoins) for fire in granted)
            self._granted.sort(key=lambda entry: entry[0].claim.scheduled_for)
        self.run_due()

    def run_due(self) -> None:
        """Run the granted fires whose time has come."""
        if not self._granted:
            return
        # Health first, then the rejoin count: a declaration of death that lands in between is
        # still seen (the count moves before the node is healthy again).
        if not self.membership.healthy():
            return
        rejoins = self.membership.rejoins()
        due: list[HeldFire] = []
        while self._granted and self.held.seconds_until(self._granted[0][0]) == 0.0:
            fire, granted_at = self._granted.pop(0)
            if granted_at == rejoins:
                due.append(fire)
        if due:
            self._last_run = self._monotonic()
            self.runs.start_held(due)

    def seconds_until_run(self) -> float | None:
        """Seconds until the loop should run granted fires, ``None`` when none waits: when the
        earliest is due, but no sooner than ``window`` after the last fires were run, so that
        fires due a millisecond apart run in one pass (a pass each cost a spread load 30 % more
        CPU per fire), none more than ``window`` late."""
        if not self._granted:
            return None
        until = self.held.seconds_until(self._granted[0][0])
        return max(until, self.window - (self._monotonic() - self._last_run))

    def run_all(self, sleep: Callable[[float], None]) -> None:
        """Run every granted fire at its time (the node is stopping: they were recorded started,
        and are due within the lead), waiting with ``sleep`` at most the lead and a batch window
        of real time; what is left (the node unhealthy meanwhile, or a clock that does not move)
        is left to the shutdown's release, which records it ``abandoned``."""
        deadline = time.monotonic() + self.lead + self.window + 0.1
        while self._granted and self.membership.healthy() and time.monotonic() < deadline:
            sleep(min(self.seconds_until_run() or 0.0, max(0.0, deadline - time.monotonic())))
            self.run_due()

    def claims(self) -> list[Claim]:
        """The claims granted and waiting for their time, earliest first."""
        return [fire.claim for fire, _ in self._granted]

    def drop(self) -> int:
        """Forget the granted fires (the others released their claims); how many there were."""
        dropped = len(self._granted)
        self._granted = []
        return dropped

    def __len__(self) -> int:
        return len(self._granted)


class Rejoins:
    """Notices that the membership found this node declared dead (:meth:`Membership.rejoins`)
    and drops its held fires, pending retries and unwritten ends: the others released those
    claims and recorded their runs. Runs handed to executors before are fenced: those still
    waiting for a worker are not started (fence.py)."""

    def __init__(
        self,
        membership: Membership,
        held: HeldFires,
        starts: FencedStarts,
        retries: RetryQueue,
        ends: EndWriter,
        runs: Runs,
    ) -> None:
        self.membership = membership
        self.held = held
        self.starts = starts
        self.retries = retries
        self.ends = ends
        self.runs = runs
        # The count this engine acts on (the runs' fence was made under it too), not the
        # membership's latest: a run handed over before the drop below is under the old count.
        self._seen = runs.fence.epoch

    def check(self) -> None:
        rejoins = self.membership.rejoins()
        if rejoins == self._seen:
            return
        self._seen = rejoins
        self.runs.rejoined(rejoins)
        held = self.held.clear() + self.starts.drop()
        retries = len(self.retries.take_all())
        ends = self.ends.drop()
        log.warning(
            "this node was declared dead by the others, who released its claims: dropped %d fire(s) claimed "
            "ahead, %d pending retr(ies) and %d unwritten run end(s) instead of starting or writing them; "
            "of %d run(s) handed to executors, those still waiting for a worker will not start and those "
            "going will only note their end",
            held,
            retries,
            ends,
            len(self.runs.in_flight),
        )
