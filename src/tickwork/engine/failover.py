"""What keeps failover exact on the engine's side: fires claimed ahead start only through the
fenced start, and a node told it was declared dead drops what the others recorded
(docs/claim-protocol.md, "Fenced starts" and "A node declared dead")."""

from __future__ import annotations

import logging
from collections.abc import Sized

from ..abc import Membership, Store
from .ends import EndWriter
from .held import HeldFires
from .retries import RetryQueue
from .runs import Runs
from .watch import PassWatch

log = logging.getLogger("tickwork.engine")


class FencedStarts:
    """Starts the held fires that are due, through one :meth:`Store.start_held` per pass."""

    def __init__(self, store: Store, node_id: str, grace: float, held: HeldFires, runs: Runs, watch: PassWatch) -> None:
        self.store = store
        self.node_id = node_id
        self.grace = grace
        self.held = held
        self.runs = runs
        self.watch = watch

    def start_due(self) -> None:
        if self.held.seconds_until_next() != 0.0:
            return
        with self.watch.step("starting fires claimed ahead"):
            granted = self.held.start_due(lambda claims: self.store.start_held(self.node_id, claims, self.grace))
        if granted:
            self.runs.start_held(granted)


class Rejoins:
    """Notices that the membership found this node declared dead (:meth:`Membership.rejoins`)
    and drops its held fires, pending retries and unwritten ends: the others released those
    claims and recorded their runs."""

    def __init__(
        self,
        membership: Membership,
        held: HeldFires,
        retries: RetryQueue,
        ends: EndWriter,
        in_flight: Sized,
    ) -> None:
        self.membership = membership
        self.held = held
        self.retries = retries
        self.ends = ends
        self.in_flight = in_flight
        self._seen = membership.rejoins()

    def check(self) -> None:
        rejoins = self.membership.rejoins()
        if rejoins == self._seen:
            return
        self._seen = rejoins
        held = self.held.clear()
        retries = len(self.retries.take_all())
        ends = self.ends.drop()
        log.warning(
            "this node was declared dead by the others, who released its claims: dropped %d fire(s) claimed "
            "ahead, %d pending retr(ies) and %d unwritten run end(s) instead of starting or writing them; "
            "%d run(s) still going will only note their end",
            held,
            retries,
            ends,
            len(self.in_flight),
        )
