"""What keeps failover exact on the engine's side: fires claimed ahead start only through the
fenced start, and a node told it was declared dead drops what the others recorded
(docs/claim-protocol.md, "Fenced starts" and "A node declared dead")."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

from ..abc import Membership, Store
from ..structures import Claim, Finish, StartRound
from .ends import EndWriter
from .held import HeldFire, HeldFires
from .retries import RetryQueue
from .runs import Runs
from .watch import PassWatch

log = logging.getLogger("tickwork.engine")

#: Seconds: the least margin ahead of the earliest held fire at which its start is sent.
START_MARGIN_FLOOR = 0.005
#: Round trips of the start statement (as estimated) before the earliest held fire at which it is sent.
ROUND_TRIPS_AHEAD = 1.5
#: Weight of the latest round trip of a start statement in the running estimate of the next.
ROUND_TRIP_WEIGHT = 0.2


class Takeovers:
    """When this node runs the takeover (:meth:`Store.take_over_unstarted`): every ``interval``
    seconds (``takeover_interval``) at least, riding on a start statement when one goes out from
    half an interval after the last takeover on (:meth:`Store.start_round`), on its own when
    none did by a full interval. So no two takeovers are further apart than before (a statement
    of its own every interval), and a node whose start statements go out more often than every
    half interval sends none of its own.
    """

    def __init__(self, interval: float, monotonic: Callable[[], float]) -> None:
        self.interval = interval
        self._monotonic = monotonic
        self._last = -math.inf

    def _since(self) -> float:
        return self._monotonic() - self._last

    def wanted(self) -> bool:
        """Whether a start statement sent now carries the takeover."""
        return self._since() >= self.interval / 2

    def turn(self) -> bool:
        """The housekeeping's turn: whether to run the takeover on its own now (none for a full
        interval)."""
        return self._since() >= self.interval

    def seconds_until_turn(self) -> float:
        """Seconds until the takeover runs on its own unless a start statement carries it."""
        return max(0.0, self.interval - self._since())

    def done(self) -> None:
        """A takeover ran (on its own or with a start statement)."""
        self._last = self._monotonic()


class FencedStarts:
    """Starts the held fires that are due, through one :meth:`Store.start_held` per start window.

    With a ``lead``, the starts of the fires due within it are recorded ahead of their time, so
    that the statement's round trip is not between a fire's time and its run; the granted fires
    wait here and are run at their time by the database clock (never before it), and only while
    the node is healthy and has not been declared dead since (a node that froze meanwhile must
    not run what the others recorded ``abandoned``: it drops them when it learns it).

    A start statement is sent only once the earliest held fire is due within :meth:`margin`
    (about two round trips of the statement), and it starts every fire due within the lead: one
    statement per ``lead - margin`` of fires, whatever else woke the loop meanwhile (run ends,
    granted fires, claims). Sent at every pass that found a fire within the lead, a spread load
    of 1,000 fires a second over 3 nodes cost 0.3-0.4 statements per fire, three fires each
    (docs/claim-protocol.md#start-windows). No start is ever recorded more than ``lead`` ahead.
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
        ends: EndWriter,
        takeovers: Takeovers,
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
        self.ends = ends
        self.takeovers = takeovers
        self._last_run = -math.inf
        #: Running estimate of a start statement's round trip (seconds, monotonic clock).
        self._round_trip = 0.0
        #: Granted ahead of their time, earliest first, each with the membership's rejoin count
        #: when it was granted.
        self._granted: list[tuple[HeldFire, int]] = []

    def margin(self) -> float:
        """Seconds before the earliest held fire's time at which the start statement for the
        fires within the lead is sent: 1.5 estimated round trips, so that it is back before
        that fire's time, at least :data:`START_MARGIN_FLOOR` and at most half the lead (so that
        a slow database still leaves each statement half a lead of fires). 0 without a lead:
        fires then start at their time (and within ``window`` after it, batched)."""
        if self.lead <= 0.0:
            return 0.0
        return min(self.lead / 2, max(START_MARGIN_FLOOR, ROUND_TRIPS_AHEAD * self._round_trip))

    def start_due(self) -> None:
        until = self.held.seconds_until_next()
        error: Exception | None = None
        if until is not None and until <= self.margin():
            error = self._start(self.ends.take_riders(), self.takeovers.wanted())
        self.run_due()
        if error is not None:
            raise error

    def _start(self, finishes: list[Finish], take_over: bool) -> Exception | None:
        """One start window's round trip (:meth:`Store.start_round`): the starts of the held
        fires due within the lead, with the ends gathered so far and, when it is wanted, the
        takeover riding on it. :return: the database error that stopped what rode on it after the starts
        were recorded (raised once the granted fires ran)"""
        rounds: list[StartRound] = []

        def start(claims: list[Claim]) -> list[bool]:
            done = self.store.start_round(
                self.node_id, claims, self.grace, self.lead, take_over=take_over, finishes=finishes
            )
            rounds.append(done)
            return list(done.granted)

        sent = self._monotonic()
        try:
            with self.watch.step("starting fires claimed ahead"):
                granted = self.held.start_due(start, self.lead)
        except BaseException:
            # Not written (a store error writes nothing of a round that raises): kept, due at once.
            self.ends.put_back(finishes)
            raise
        took = self._monotonic() - sent
        self._round_trip += ROUND_TRIP_WEIGHT * (took - self._round_trip)
        rejoins = self.membership.rejoins()
        self._granted.extend((fire, rejoins) for fire in granted)
        self._granted.sort(key=lambda entry: entry[0].claim.scheduled_for)
        if not rounds:
            self.ends.put_back(finishes)
            return None
        done = rounds[0]
        if take_over and done.taken_over is not None:
            self.takeovers.done()
        if done.ended is None:
            self.ends.put_back(finishes)
        else:
            self.ends.settle(finishes, done.ended)
        return done.error

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

    def count(self, which: Callable[[Claim], bool]) -> int:
        """How many granted claims ``which`` accepts."""
        return sum(1 for fire, _ in self._granted if which(fire.claim))

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
