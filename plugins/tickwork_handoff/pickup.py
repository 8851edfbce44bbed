"""The maintenance step that finds hand-offs no worker picked up (docs/handoff.md#stuck-hand-offs).

A message published to a queue nobody consumes, or consumed by workers without the worker-side
integration (``tickwork_celery.worker.install(app)`` not called), never reports ``started``: its
run stays ``submitted`` and, with ``no_overlap``, every later fire of its schedule is skipped
until ``report_timeout`` (an hour by default, which long tasks need). So every node running a
hand-off executor looks, every few seconds, for ``submitted`` runs of that executor's schedules
handed off more than ``pickup_timeout`` ago by the database clock, and marks each one in its row
(:meth:`tickwork.abc.Store.mark_stuck_handoffs`): the mark is what health reads (``stuck``), and
its fence makes the WARNING one line per stuck run across the cluster, not one per look.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from tickwork.abc import Store
from tickwork.structures import HANDOFF_STUCK, RunRecord, iso_z

from .executor import HandoffExecutor

log = logging.getLogger("tickwork.handoff")

#: The longest pause between two looks: a stuck hand-off is found at most this long after its
#: ``pickup_timeout`` passed (a shorter timeout is looked at four times as often as it lasts).
MOST_SECONDS = 5.0


def note_for(executor: HandoffExecutor) -> str:
    """The error text a stuck run of ``executor`` gets (it starts with :data:`HANDOFF_STUCK`)."""
    return (
        f"{HANDOFF_STUCK}no worker reported it started within pickup_timeout = {executor.pickup_timeout:g}s of "
        f"its hand-off: the {executor.name} workers lack the worker side ({executor.worker_side}) or no worker "
        "consumes its queue"
    )


def warning(executor: HandoffExecutor, stuck: Sequence[RunRecord]) -> str:
    """The one WARNING line for the runs a look found stuck: executor, schedules, likely cause."""
    names = sorted({run.schedule for run in stuck})
    runs = ", ".join(f"run {r.id} of {r.schedule!r} handed off at {iso_z(r.finished_at)}" for r in stuck[:10])
    more = f" and {len(stuck) - 10} more" if len(stuck) > 10 else ""
    return (
        f"{executor.name}: {len(stuck)} hand-off(s) not reported started by any worker within pickup_timeout = "
        f"{executor.pickup_timeout:g}s, schedule(s) {', '.join(repr(n) for n in names)} stuck ({runs}{more}). "
        f"Likely cause: the workers run without the worker side ({executor.worker_side}), or no worker consumes "
        f"the queue. Their later fires are skipped until a worker reports or report_timeout = "
        f"{executor.report_timeout:g}s passes; `tickwork jobs release NAME` releases one now"
    )


class PickupWatch:
    """Looks for stuck hand-offs of ``executors`` in ``store`` from a thread of its own."""

    def __init__(self, node_id: str, store: Store, executors: Sequence[HandoffExecutor]) -> None:
        self._store = store
        self._executors = list(executors)
        self._interval = max(0.05, min(MOST_SECONDS, *(e.pickup_timeout / 4 for e in executors)))
        self._stop = threading.Event()
        self._failing = False
        self._thread = threading.Thread(target=self._loop, name=f"tickwork-pickup-{node_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    def look(self) -> list[RunRecord]:
        """One look: the runs it marked stuck (each logged in one WARNING per executor)."""
        found: list[RunRecord] = []
        for executor in self._executors:
            stuck = self._store.mark_stuck_handoffs(executor.name, executor.pickup_timeout, note_for(executor))
            if stuck:
                log.warning("%s", warning(executor, stuck))
                found += stuck
        return found

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.look()
                self._failing = False
            except Exception as exc:  # the store may be down: the next look tries again, warned once
                if not self._failing:
                    log.warning("looking for stuck hand-offs failed: %s", str(exc).splitlines()[0] if str(exc) else exc)
                self._failing = True
