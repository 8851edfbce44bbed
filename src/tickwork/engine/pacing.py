"""How long the loop may sleep: the earliest of what the engine's parts are waiting for (run
deadlines, housekeeping, end batches, held fires, granted starts, retries, the next claim)."""

from __future__ import annotations

import math

from ..abc import HANDOFFS_PER_RUN, Membership
from .ends import EndWriter
from .failover import FencedStarts
from .gate import ClaimGate
from .held import HeldFires
from .housekeeping import Housekeeping
from .retries import RetryQueue
from .runs import Runs
from .settings import UNHEALTHY_POLL, EngineSettings, clamp_wait


class Pacing:
    """Reads the engine's parts, asks the store nothing (the claim gate keeps the next due time)."""

    def __init__(
        self,
        settings: EngineSettings,
        membership: Membership,
        gate: ClaimGate,
        runs: Runs,
        held: HeldFires,
        starts: FencedStarts,
        retries: RetryQueue,
        ends: EndWriter,
        housekeeping: Housekeeping,
    ) -> None:
        self.settings = settings
        self.membership = membership
        self.gate = gate
        self.runs = runs
        self.held = held
        self.starts = starts
        self.retries = retries
        self.ends = ends
        self.housekeeping = housekeeping

    def busy(self) -> bool:
        """Whether any run is in flight or any fire or retry waits to start."""
        return bool(self.runs.in_flight or self.held or self.starts or self.retries)

    def _next_waiting(self) -> float | None:
        """Seconds until the earliest fire waiting on this node for its time (held for its
        start, its fenced start granted, or a retry) is due; ``None`` when none waits."""
        untils = [
            until
            for until in (
                self.held.seconds_until_next(),
                self.starts.seconds_until_run(),
                self.retries.seconds_until_next(),
            )
            if until is not None
        ]
        return min(untils, default=None)

    def waiting_within(self, seconds: float) -> bool:
        """Whether any fire waits on this node for its time and is due within ``seconds``."""
        until = self._next_waiting()
        return until is not None and until <= seconds

    def room(self, wanted: int = 1) -> int:
        """How many more fires this node may claim: ``max_in_flight`` less the runs in flight and
        the fires held for their time, each fire for an executor that hands off counting as
        ``1 / HANDOFFS_PER_RUN`` (rounded up over all of them). Those are counted, one pass over
        what is in flight and held, only when the plain count leaves fewer than ``wanted``: a
        claim of fires that all run here never overshoots ``max_in_flight`` either way."""
        used = len(self.runs.in_flight) + len(self.held) + len(self.starts)
        room = self.settings.max_in_flight - used
        if room >= wanted or not used:
            return room
        hands_off = self.runs.hands_off
        handoffs = (
            sum(1 for flight in self.runs.in_flight.values() if hands_off(flight.claim))
            + self.held.count(hands_off)
            + self.starts.count(hands_off)
        )
        return room + handoffs - math.ceil(handoffs / HANDOFFS_PER_RUN)

    def nothing_due_within(self, seconds: float) -> bool:
        """Whether no held fire, retry or claimable fire is due within ``seconds``, by what the
        engine knows without asking the store: then no run but those in flight can end by then."""
        return not self.waiting_within(seconds) and self.gate.nothing_due_within(seconds)

    def sleep_seconds(self) -> float:
        """How long the loop may sleep before something needs it (at most ``max_sleep``)."""
        settings = self.settings
        sleep = settings.max_sleep
        deadline = self.runs.earliest_deadline()
        if deadline is not None:
            sleep = min(sleep, deadline - self.runs.clock.monotonic())
        sleep = min(sleep, self.housekeeping.seconds_until_next(busy=self.busy()))
        ends = self.ends.seconds_until_due()
        if ends is not None:
            sleep = min(sleep, ends)
        if not self.membership.healthy():
            # Nothing starts meanwhile; look again soon: the heartbeat that makes it healthy again
            # (after a database outage) does not wake the loop.
            return clamp_wait(min(sleep, UNHEALTHY_POLL))
        retry = self.retries.seconds_until_next()
        if retry is not None:
            sleep = min(sleep, retry)
        held = self.held.seconds_until_next()
        if held is not None:
            # The earliest held fire wakes the loop its start margin before its time: the start
            # statement then records the starts of every fire due within start_lead. With no
            # lead: start_batch_window after its time, so that the fires of those milliseconds
            # start in the same statement.
            if settings.start_lead > 0.0:
                sleep = min(sleep, max(0.0, held - self.starts.margin()))
            else:
                sleep = min(sleep, held + settings.start_batch_window if held > 0.0 else 0.0)
        granted = self.starts.seconds_until_run()
        if granted is not None:
            sleep = min(sleep, granted)
        if self.room() <= 0:
            return clamp_wait(min(sleep, 0.5))
        return clamp_wait(self.gate.seconds_until_claim(sleep))
