"""The engine of one tickwork node: sleep until something is due, claim it, run it, end it.

One thread runs the loop; executors report outcomes from their own threads into a queue the loop
drains in batches, so claims, history writes and releases are each one statement per batch. This
module builds the engine's parts (docs/architecture.md#the-engine) and drives the thread: when a
pass runs, how long it sleeps, what a failed pass costs. What a pass does is ``passes.py``, the
graceful stop ``shutdown.py``, how long to sleep ``pacing.py``; fire times come from the pure
functions of ``planning.py``.

A fault while handling one claim (its trigger, its executor, its arithmetic) ends that run with
the error recorded and parks the schedule; a fault of the loop itself is logged and backed off.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime

from ..abc import CLAIM_GROWTH, Executor, Membership, Store
from ..errors import StoreError
from ..plugin.manager import PluginManager
from ..structures import Claim
from .backfills import BackfillRunner
from .claimsize import ClaimSize
from .clock import DatabaseClock
from .counters import Counters
from .ends import EndWriter
from .failover import FencedStarts, Rejoins
from .faults import OnceLogger, PassBackoff
from .followups import FollowUps
from .gate import ClaimGate
from .held import HeldFires
from .housekeeping import Housekeeping
from .listener import EngineListener, SafeListener
from .nextfires import NextFires
from .pacing import Pacing
from .passes import Pass
from .rerun import Reruns
from .retries import RetryQueue
from .runs import Runs
from .settings import EngineSettings
from .shutdown import Shutdown
from .watch import PassWatch

log = logging.getLogger("tickwork.engine")


class Engine:
    """Runs the claim → execute → finish loop of one node: builds its parts, drives the loop
    thread, and is their public face.

    :param store: an open store
    :param executors: executors by name (a schedule names the one that runs it)
    :param membership: started membership (which buckets this node attempts)
    :param clock: tests only: the database clock
    :param monotonic: tests only: the node's monotonic clock
    :param manager: the process's plugin manager (triggers are looked up in it)
    :param stall_after: seconds after which a pass of the loop counts as stalled (logged, and
        the node is unhealthy meanwhile); default: half the membership's ``node_ttl``
    """

    def __init__(
        self,
        store: Store,
        executors: dict[str, Executor],
        membership: Membership,
        settings: EngineSettings,
        *,
        clock: Callable[[], datetime] | None = None,
        listener: EngineListener | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        manager: PluginManager | None = None,
        stall_after: float | None = None,
    ) -> None:
        self.store = store
        self.listener: EngineListener = SafeListener(listener) if listener is not None else EngineListener()
        self.executors = executors
        self.membership = membership
        self.settings = settings
        self.manager = manager
        self.clock = DatabaseClock(store, clock, monotonic)
        self.counters = Counters()
        self.gate = ClaimGate(
            store, membership, self.clock, settings.lookahead, settings.steal_after, settings.namespaces
        )
        self.held_fires = HeldFires(
            lambda h: self.clock.since_claim(h.claim.claimed_at, h.mono_claimed, self.clock.monotonic())
        )
        self.retries = RetryQueue(store, settings.node_id, monotonic)
        self.ends = EndWriter(
            store,
            settings.node_id,
            self.counters,
            lambda: self.listener,
            self.gate.fold_released,
            clock=self.clock,
            window=settings.end_batch_window,
            # The longest claim lead of any node (see ClaimGate.draw_claim_lead).
            lead=settings.lookahead / 2,
            max_batch=settings.batch_size,
            idle=lambda: not self.in_flight and self.nothing_due_within(settings.end_batch_window),
            backfill_ended=lambda: self.backfills.ended(),
        )
        self.housekeeping = Housekeeping(
            store,
            settings,
            self.tracked_claims,
            monotonic,
            manager,
            backfills=lambda: self.backfills.run(),
        )
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self.follow_ups = FollowUps(
            store=store,
            settings=settings,
            clock=self.clock,
            retries=self.retries,
            next_fires=NextFires(manager),
            listener=lambda: self.listener,
            backfill_ended=lambda: self.backfills.ended(),
        )
        self.runs = Runs(
            settings=settings,
            executors=executors,
            membership=membership,
            clock=self.clock,
            counters=self.counters,
            held=self.held_fires,
            follow_ups=self.follow_ups,
            ends=self.ends,
            listener=lambda: self.listener,
            wake=self._wake,
            reruns=Reruns(store, settings.node_id, settings.misfire_grace),
        )
        #: Backfilled fires, taken by a housekeeping duty and run through ``self.runs``.
        self.backfills = BackfillRunner(store, self.runs, membership, settings)
        #: Runs handed to executors and not ended yet, by run id.
        self.in_flight = self.runs.in_flight
        self._errors = OnceLogger(log)
        self._backoff = PassBackoff(log, monotonic)
        if stall_after is None:
            stall_after = membership.node_ttl / 2
        #: The pass in progress: what it waits on, and whether it waited too long.
        self.watch = PassWatch(monotonic, stall_after)
        membership.watch_loop(self.watch.stalled)
        self.fenced_starts = FencedStarts(
            store,
            settings.node_id,
            settings.start_grace,
            settings.start_lead,
            settings.start_batch_window,
            self.held_fires,
            self.runs,
            self.watch,
            membership,
            self.clock.monotonic,
            self.ends,
            self.housekeeping.takeovers,
        )
        self.rejoins = Rejoins(membership, self.held_fires, self.fenced_starts, self.retries, self.ends, self.runs)
        self.pacing = Pacing(
            settings,
            membership,
            self.gate,
            self.runs,
            self.held_fires,
            self.fenced_starts,
            self.retries,
            self.ends,
            self.housekeeping,
        )
        #: What one pass does, in its order (the loop decides when a pass runs).
        self.one_pass = Pass(
            store=store,
            settings=settings,
            membership=membership,
            clock=self.clock,
            listener=lambda: self.listener,
            gate=self.gate,
            claim_size=ClaimSize(
                settings.batch_size,
                min(store.claim_ceiling, CLAIM_GROWTH * settings.batch_size),
                self.pacing.waiting_within,
                settings.start_lead,
            ),
            runs=self.runs,
            starts=self.fenced_starts,
            retries=self.retries,
            ends=self.ends,
            housekeeping=self.housekeeping,
            rejoins=self.rejoins,
            pacing=self.pacing,
            backfills=self.backfills,
            watch=self.watch,
        )
        #: The graceful stop of the loop's work (:meth:`shutdown`).
        self.way_out = Shutdown(
            store=store,
            node_id=settings.node_id,
            housekeeping=self.housekeeping,
            held=self.held_fires,
            starts=self.fenced_starts,
            runs=self.runs,
            follow_ups=self.follow_ups,
            ends=self.ends,
            wake=self._wake,
            errors=self._errors,
        )

    # -- counters (logs, tests, benchmarks) ---------------------------------------------------------

    @property
    def fired(self) -> int:
        return self.counters.fired

    @property
    def finished(self) -> int:
        return self.counters.finished

    @property
    def skipped(self) -> int:
        return self.counters.skipped

    @property
    def fenced_out(self) -> int:
        return self.counters.fenced_out

    @property
    def not_started(self) -> int:
        """Runs an executor did not start: the node was declared dead while they waited (fence.py)."""
        return self.counters.not_started

    # -- control ----------------------------------------------------------------------------------

    def wake(self) -> None:
        """Re-check at once: something changed in the store (a notification, a membership change)."""
        self.gate.changed()
        self._wake.set()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def run_forever(self, until: float | None = None) -> None:
        """Loop until :meth:`stop` (or the monotonic time ``until``); see :meth:`run_once`.

        The process-wide garbage collector is left as it is: a node's own process tunes it
        (:func:`tickwork.node.process.tune_gc`), an embedded node's host owns it."""
        mono = self.clock.monotonic
        try:
            while not self._stopping.is_set():
                if until is not None and mono() >= until:
                    break
                self._wake.clear()
                self.runs.outcomes.loop_awake()
                wait = self.run_once()
                if wait <= 0.0:
                    continue
                if until is not None:
                    wait = min(wait, max(0.0, until - mono()))
                wait = self.runs.outcomes.loop_asleep(
                    wait, quiet=self.nothing_due_within(self.settings.end_batch_window)
                )
                if wait > 0.0:
                    self._wake.wait(wait)
        finally:
            self.runs.outcomes.loop_stopped()

    def run_once(self) -> float:
        """One pass of the loop: :meth:`tick`, then how long to wait before the next pass (0: at
        once). Never raises an :class:`Exception`: a store error (an outage) or any other error of
        the pass is logged (with its traceback the first time) and answered with a back-off
        (:class:`~.faults.PassBackoff`: short while the store is away, so that the node resumes
        within half a second of its answering again; growing for anything else), so a node stops
        only when asked."""
        try:
            with self.watch.pass_():
                busy = self.tick()
                # Reading the next due time is a query too: an outage may surface here first.
                with self.watch.step("reading the next due time"):
                    wait = 0.0 if busy else self.sleep_seconds()
        except StoreError as exc:
            self.listener.store_error(exc)
            return self._backoff.store_fault(exc)
        except Exception as exc:
            wait = self._backoff.other_fault()
            self._errors.log("engine pass failed; backing off", exc)
            return wait
        self._backoff.succeeded()
        return wait

    def shutdown(self, timeout: float) -> None:
        """Graceful stop of the loop's work: give back held claims (first, so other nodes can
        run them on time), wait up to ``timeout`` seconds for running jobs and record them, give
        up pending retries, then release whatever else this node still holds in the store (see
        :meth:`reconcile`). Each step runs even if an earlier one failed (:class:`.shutdown.Shutdown`).

        :raises Exception: the first error met, after all steps ran (a
            :class:`tickwork.errors.StoreError` when the store was away)
        """
        self.stop()
        self.way_out.run(timeout)

    @property
    def held(self) -> list[Claim]:
        """Claims taken ahead of their time that have not started running yet (their start
        recorded ahead or not), earliest first."""
        return sorted(self.fenced_starts.claims() + self.held_fires.claims(), key=lambda c: c.scheduled_for)

    def tracked_claims(self) -> list[Claim]:
        """Every claim this engine still handles: in flight, held, waiting for a retry, or ended
        but not yet written (backfilled runs aside: they hold none)."""
        claims = [f.claim for f in self.in_flight.values()]
        held = self.held_fires.claims() + self.fenced_starts.claims()
        tracked = claims + held + self.retries.claims() + self.ends.claims()
        # A backfilled run holds no claim of its schedule (its claim_seq is only what the row had):
        # counted here, it would renew or keep a claim this node may hold for something else.
        return [c for c in tracked if not c.backfill]

    def release_held(self) -> int:
        """Give back claims taken ahead of their time (node stopping), so that another node
        can run them on time (:meth:`.shutdown.Shutdown.release_held`)."""
        return self.way_out.release_held()

    def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds (real time) for in-flight runs to end and record them."""
        self.way_out.drain(timeout)

    def reconcile(self) -> int:
        """Release every claim this node holds in the store but no longer tracks (run by the
        housekeeping every ``reap_interval`` seconds). :return: how many were released"""
        return self.housekeeping.reconcile()

    # -- one pass ---------------------------------------------------------------------------------

    def tick(self) -> bool:
        """One pass (:meth:`.passes.Pass.run`); True when a full batch was claimed."""
        return self.one_pass.run()

    def nothing_due_within(self, seconds: float) -> bool:
        """See :meth:`.pacing.Pacing.nothing_due_within`."""
        return self.pacing.nothing_due_within(seconds)

    def sleep_seconds(self) -> float:
        """How long the loop may sleep before something needs it (:class:`.pacing.Pacing`)."""
        return self.pacing.sleep_seconds()
