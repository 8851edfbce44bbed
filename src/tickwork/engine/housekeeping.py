"""Background duties of a node, run between passes of the loop: renew, reap, reconcile, resume
the pauses that ended, and starting a prune of the history (which runs on its own thread: :mod:`.pruning`).

Each duty is a small service with its own interval (River's maintenance services): one that
fails with something other than a store error is logged once and tried again at its next turn;
the others keep running.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from ..abc import Store
from ..errors import StoreError
from ..plugin.manager import PluginManager
from ..scheduling.sync import resume_expired
from ..structures import Claim
from .failover import Takeovers
from .faults import OnceLogger
from .pruning import HistoryPruner
from .settings import PRUNE_INTERVAL, RESUME_INTERVAL, EngineSettings

log = logging.getLogger("tickwork.engine")


@dataclass
class Service:
    """A duty run every ``interval`` seconds; ``when_idle`` is false for duties with nothing to
    do while this node holds no claim."""

    name: str
    interval: float
    run: Callable[[], object]
    when_idle: bool = True
    next_run: float = 0.0
    #: Seconds until its next turn, asked after each run (``None``: ``interval``): a duty that
    #: knows when it has work next (a pause's end) wakes the node then, not every second.
    after: Callable[[], float] | None = None
    #: Whether its last run failed on the store (an outage): the next failures are not warned again.
    failing: bool = False
    #: The least wait ``after`` may ask for.
    least: float = RESUME_INTERVAL


class Housekeeping:
    """The node's duties. ``tracked`` returns every claim the engine still handles (in flight,
    held, waiting for a retry, end not yet written): anything else this node holds in the store
    is stranded and the reconcile releases it."""

    def __init__(
        self,
        store: Store,
        settings: EngineSettings,
        tracked: Callable[[], list[Claim]],
        monotonic: Callable[[], float],
        manager: PluginManager | None = None,
        backfills: Callable[[], int] | None = None,
    ) -> None:
        self.store = store
        self.manager = manager
        self.settings = settings
        self.tracked = tracked
        self.monotonic = monotonic
        self._errors = OnceLogger(log)
        self.services = [
            Service("renew", settings.renew_interval, self.renew, when_idle=False),
            Service("reap", settings.reap_interval, self.reap),
            # As often as the reap: both release what nobody runs any more.
            Service("reconcile", settings.reap_interval, self.reconcile),
            Service("resume", settings.reap_interval, self.resume, after=self._resume_after),
            # Fires claimed ahead by any node (a dead, frozen or cut-off one included) that did
            # not start by their deadline: given back within about start_grace + this interval.
            # Only while this node holds claims: an idle node would otherwise wake every interval
            # (a cluster at work has every node busy; in an idle one, the dead-node release at
            # node_ttl gives such fires back too).
            Service(
                "takeover",
                settings.takeover_interval,
                self.take_over,
                when_idle=False,
                after=lambda: self.takeovers.seconds_until_turn(),
                least=0.0,
            ),
        ]
        #: When the takeover runs: on its own, or riding on a start statement.
        self.takeovers = Takeovers(settings.takeover_interval, monotonic)
        self._pause_ends: float | None = None
        self._backfills = backfills
        self._backfilling = False
        if backfills is not None:
            # The fallback look (the end of one of this node's backfilled runs takes the next at
            # once, Engine.tick): every second while there is backfill work, for ends it does not
            # see (another node's, the schedule's own run), else as often as the reap: a backfill
            # queued on an idle cluster starts within a reap interval.
            self.services.append(Service("backfill", settings.reap_interval, self.backfill, after=self._backfill_after))
        self.pruner: HistoryPruner | None = None
        if settings.history_retention is not None:
            self.pruner = HistoryPruner(store, settings.history_retention)
            self.services.append(Service("prune", PRUNE_INTERVAL, self.pruner.start))
        # The first reconcile waits a full interval: start-up already released what was left.
        self.services[2].next_run = monotonic() + settings.reap_interval

    def run_due(self, busy: bool) -> None:
        """Run the duties whose turn it is (``busy``: this node holds claims).

        A store error of one duty (an outage, a statement timeout) is logged at WARNING (once
        until that duty succeeds again) and that duty tries again at its next turn; the pass goes
        on, so the fires keep starting (an outage surfaces in the pass's other statements and is
        backed off there). No duty waits for a schedule row another session holds locked: each
        passes it over to a later turn (docs/claim-protocol.md, "Locks held by other sessions"),
        as a wait of ``lock_timeout`` here would hold up the starts of the fires claimed ahead.
        """
        now = self.monotonic()
        for service in self.services:
            if now < service.next_run or (not busy and not service.when_idle):
                continue
            service.next_run = now + service.interval
            try:
                service.run()
            except StoreError as exc:
                # Once per outage: the pass's own back-off warns about the store being away.
                level = logging.DEBUG if service.failing else logging.WARNING
                service.failing = True
                log.log(
                    level, "housekeeping %s failed (%s); trying again in %.1fs", service.name, exc, service.interval
                )
            except Exception as exc:
                self._errors.log(f"housekeeping {service.name} failed", exc)
            else:
                service.failing = False
                if service.after is not None:
                    service.next_run = now + min(service.interval, max(service.after(), service.least))

    def seconds_until_next(self, busy: bool) -> float:
        now = self.monotonic()
        waits = [s.next_run - now for s in self.services if busy or s.when_idle]
        return max(0.0, min(waits)) if waits else float("inf")

    def renew(self) -> None:
        self.store.renew(self.settings.node_id, self.tracked())

    def reap(self) -> None:
        reaped = self.store.reap_expired(self.settings.hard_timeout_grace)
        if reaped:
            log.warning("hard timeout released %d schedule(s)", reaped)

    def resume(self) -> None:
        """Enable the schedules whose ``jobs pause --until`` passed (database clock), and note
        when the next pause ends."""
        for schedule in resume_expired(self.store, self.manager):
            log.info("resumed %s: its pause ended (%s)", schedule.name, schedule.pause.note if schedule.pause else "")
        self._pause_ends = self.store.next_pause_end()

    def _resume_after(self) -> float:
        """Seconds until the next pause ends (at least a second; at most the interval)."""
        return float("inf") if self._pause_ends is None else self._pause_ends

    def backfill(self) -> None:
        assert self._backfills is not None
        self._backfilling = self._backfills() > 0

    def _backfill_after(self) -> float:
        return RESUME_INTERVAL if self._backfilling else float("inf")

    def take_over(self) -> int:
        """Give back the fires claimed ahead that did not start by their deadline, whoever holds
        them (the store logs which), unless the next start statement carries it (:class:`.failover.Takeovers`)."""
        if not self.takeovers.turn():
            return 0
        taken = self.store.take_over_unstarted(self.settings.start_grace)
        self.takeovers.done()
        return taken

    def reconcile(self) -> int:
        """Release what this node holds in the store but no longer tracks (a claim whose answer
        was lost, a retry whose start failed, ...), recording its running runs as abandoned."""
        node = self.settings.node_id
        released = self.store.release_untracked(
            node, self.tracked(), f"node {node} no longer tracked this claim (released by its reconcile)"
        )
        if released:
            log.warning("reconcile released %d claim(s) this node no longer tracked", released)
        return released

    def stop(self) -> None:
        """Stop the history pruning after its batch in progress (before the store closes)."""
        if self.pruner is not None:
            self.pruner.stop()
