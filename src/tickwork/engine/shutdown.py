"""The engine's way out once its loop stopped: give back held claims, record the last runs, give
up pending retries, release what it no longer tracks.

Each step runs even if an earlier one failed: the store may be away, and a step that cannot
reach it must not keep the others from giving back what they can. The node's own way out
(``node/shutdown.py``) calls these steps around its grace period.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..abc import Store
from .ends import EndWriter
from .failover import FencedStarts
from .faults import OnceLogger
from .followups import FollowUps
from .held import HeldFires
from .housekeeping import Housekeeping
from .runs import Runs
from .settings import clamp_wait

log = logging.getLogger("tickwork.engine")


class Shutdown:
    """The graceful stop of the loop's work, step by step.

    :param wake: the loop's wake event, set when a run ends: draining waits on it
    """

    def __init__(
        self,
        *,
        store: Store,
        node_id: str,
        housekeeping: Housekeeping,
        held: HeldFires,
        starts: FencedStarts,
        runs: Runs,
        follow_ups: FollowUps,
        ends: EndWriter,
        wake: threading.Event,
        errors: OnceLogger,
    ) -> None:
        self.store = store
        self.node_id = node_id
        self.housekeeping = housekeeping
        self.held = held
        self.starts = starts
        self.runs = runs
        self.follow_ups = follow_ups
        self.ends = ends
        self.wake = wake
        self.errors = errors

    def run(self, timeout: float) -> None:
        """Every step, in order, each even if an earlier one failed.

        :raises Exception: the first error met (after all steps ran)
        """
        failed: list[Exception] = []
        steps: list[tuple[str, Callable[[], object]]] = [
            # Waits for the batch in progress (one bounded statement): the store closes next.
            ("stop pruning the history", self.housekeeping.stop),
            ("give back claims taken ahead of their time", self.release_held),
            ("record the last runs", lambda: self.drain(timeout)),
            ("give up pending retries", self.drop_retries),
            ("release untracked claims", self.housekeeping.reconcile),
        ]
        for what, step in steps:
            try:
                step()
            except Exception as exc:
                failed.append(exc)
                self.errors.log(f"shutdown: could not {what}", exc)
        if failed:
            raise failed[0]

    def release_held(self) -> int:
        """Give back claims taken ahead of their time, so that another node can run them on
        time; see :meth:`tickwork.abc.Store.unclaim`. Those whose start was recorded ahead
        (``start_lead``) run at their time first, a few milliseconds away."""
        self.starts.run_all(time.sleep)
        given_back = self.held.give_back(lambda claims: self.store.unclaim(self.node_id, claims))
        if given_back:
            log.info(
                "handed %d upcoming fire(s) back to the cluster: they were claimed early to start on time; "
                "another node (or this one's next start) runs them",
                given_back,
            )
        return given_back

    def drop_retries(self) -> None:
        """Give up pending retries: release their schedules to the next fire."""
        self.ends.write(*self.follow_ups.give_up_retries())

    def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds (real time) for in-flight runs to end and record them."""
        deadline = time.monotonic() + clamp_wait(timeout)
        while self.runs.in_flight and time.monotonic() < deadline:
            self.wake.wait(min(0.05, max(0.0, deadline - time.monotonic())))
            self.wake.clear()
            self.runs.expire_overdue()
            self.runs.finish_completed()
        self.runs.write_ends(now=True)
