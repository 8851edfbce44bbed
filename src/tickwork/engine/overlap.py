"""Overlap: what a schedule does with fires that came due while its own previous run was active
(``overlap``, docs/triggers.md#overlap).

- :func:`plan_overlap` (pure) plans the end of a run of a ``buffer_one``, ``buffer_all`` or
  ``cancel_other`` schedule: which passed fire waits (it becomes the schedule's next fire, in
  the past, so it is claimed at once through the usual fenced claim) and which are skipped, why.
- :class:`WaitingFires` remembers, on the node that planned it, when a waiting fire stopped
  waiting: its lateness is counted from there, not from its own time (it waited for a run, not
  for a node).
- :class:`CancelWatch` asks the executor to stop a ``cancel_other`` run when the schedule's next
  fire comes due, by the database clock.

``skip`` (the default) is planned by :func:`~tickwork.engine.planning.plan_next_fire` as before.
"""

from __future__ import annotations

import heapq
import logging
from collections import deque
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from ..abc import Executor
from ..structures import Claim, Finish, Outcome, Overlap, iso_z
from .planning import FirePlan, NextAfter
from .settings import MAX_SKIPPED_RECORDS

log = logging.getLogger("tickwork.engine")

#: The most fires ``buffer_all`` keeps waiting (Temporal's default buffer limit): a schedule
#: whose runs always outlast its period would otherwise wait on an ever longer queue.
MAX_WAITING = 1000
#: The most passed fire times one end looks at one by one; a longer gap is jumped (its fires
#: are not all recorded, as :func:`~tickwork.engine.planning.plan_next_fire` jumps).
MAX_WALK = 100_000


def plan_overlap(
    next_after: NextAfter,
    *,
    overlap: Overlap,
    scheduled_for: datetime,
    claimed_at: datetime,
    now: datetime,
    grace: float,
    max_catchup: int | None = None,
    max_skipped: int = MAX_SKIPPED_RECORDS,
) -> FirePlan:
    """The next fire after a run of ``scheduled_for`` (claimed at ``claimed_at``) of a schedule
    whose ``overlap`` is ``buffer_one``, ``cancel_other`` or ``buffer_all`` ends at ``now``.

    ``buffer_one`` and ``cancel_other``: the latest fire time at or before ``now`` waits (it is
    the next fire, due at once); every older one is skipped. ``buffer_all``: every fire time at or
    before ``now`` and no older than ``grace`` seconds waits, at most ``max_catchup`` of them (the
    latest; never more than :data:`MAX_WAITING`), the oldest first; older ones are skipped. With
    nothing passed the next fire is the trigger's next one, as for ``skip``.
    """
    overlap = Overlap(overlap)  # a caller's text too
    if not overlap.planned:
        raise ValueError(f"overlap {overlap.value!r} is not planned here")
    if overlap.keeps_every:
        return _plan_all(next_after, scheduled_for, now, grace, max_catchup, max_skipped)
    passed: list[datetime] = []
    latest: datetime | None = None
    nxt = next_after(scheduled_for)
    steps = 0
    while nxt is not None and nxt <= now:
        if latest is not None and len(passed) < max_skipped:
            passed.append(latest)
        latest = nxt
        steps += 1
        if steps >= MAX_WALK:
            latest = _latest_at_or_before(next_after, now) or latest
            break
        nxt = next_after(nxt)
    if latest is None:
        return FirePlan(nxt)
    late = (claimed_at - scheduled_for).total_seconds()
    then = "replaces it" if overlap.cancels else "waits for it"
    note = f"overlap {overlap.value}: only the latest due fire, {iso_z(latest)}, {then}"
    skipped = []
    for t in passed:
        if t > claimed_at:
            skipped.append((t, f"due while the previous run was still active ({note})"))
        else:
            skipped.append((t, f"passed before the previous fire was claimed ({late:.1f}s late; {note})"))
    return FirePlan(latest, tuple(skipped))


def _plan_all(
    next_after: NextAfter,
    scheduled_for: datetime,
    now: datetime,
    grace: float,
    max_catchup: int | None,
    max_skipped: int,
) -> FirePlan:
    floor = now - timedelta(seconds=grace)
    cap = MAX_WAITING if max_catchup is None else min(max_catchup, MAX_WAITING)
    if max_catchup is not None and max_catchup <= MAX_WAITING:
        beyond = f"beyond max_catchup {max_catchup} (overlap buffer_all)"
    else:
        beyond = f"beyond the {MAX_WAITING} fires overlap buffer_all keeps waiting"
    stale = f"waited longer than the misfire grace ({grace:g}s; overlap buffer_all)"
    skipped: list[tuple[datetime, str]] = []
    nxt = next_after(scheduled_for)
    while nxt is not None and nxt < floor:
        if len(skipped) >= max_skipped:
            # A longer gap is jumped: the first fire time at or after the floor.
            nxt = next_after(floor - timedelta(microseconds=1))
            break
        skipped.append((nxt, stale))
        nxt = next_after(nxt)
    waiting: deque[datetime] = deque()
    steps = 0
    while nxt is not None and nxt <= now:
        waiting.append(nxt)
        if len(waiting) > cap:
            dropped = waiting.popleft()
            if len(skipped) < max_skipped:
                skipped.append((dropped, beyond))
        steps += 1
        nxt = next_after(now) if steps >= MAX_WALK else next_after(nxt)
    return FirePlan(waiting[0] if waiting else nxt, tuple(skipped))


def _latest_at_or_before(next_after: NextAfter, now: datetime) -> datetime | None:
    """The latest fire time at or before ``now``, searched back from ``now`` in doubling steps
    (a trigger only answers "the next after")."""
    back = 1.0
    while back < 400 * 86400:
        first = next_after(now - timedelta(seconds=back))
        if first is not None and first <= now:
            latest = first
            nxt = next_after(first)
            while nxt is not None and nxt <= now:
                latest, nxt = nxt, next_after(nxt)
            return latest
        back *= 2
    return None


class WaitingFires:
    """The fires this node left waiting at a run's end (``buffer_*``, ``cancel_other``), with the
    database time that run ended: the fire waited for the run, so its lateness counts from there.
    Node-local: another node that claims it judges it by its own time (the usual misfire rule).
    Used by the engine's loop thread only."""

    def __init__(self) -> None:
        self._waiting: dict[int, tuple[datetime, datetime]] = {}

    def note(self, claim: Claim, plan: FirePlan, now: datetime) -> None:
        """Remember ``plan``'s next fire if it waits (is due at ``now`` already)."""
        fire = plan.next_fire
        if fire is not None and fire <= now:
            self._waiting[claim.schedule_id] = (fire, now)
        else:
            self._waiting.pop(claim.schedule_id, None)

    def late_since(self, claim: Claim) -> datetime:
        """The moment ``claim``'s lateness counts from: when it stopped waiting, if this node left
        it waiting, else its own fire time."""
        if not self._waiting:
            return claim.scheduled_for
        found = self._waiting.pop(claim.schedule_id, None)
        if found is None or found[0] != claim.scheduled_for:
            return claim.scheduled_for
        return max(found[1], claim.scheduled_for)

    def __len__(self) -> int:
        return len(self._waiting)


@dataclass(order=True)
class _Watched:
    at: float
    run_id: int = field(compare=False)
    claim: Claim = field(compare=False)
    due: datetime = field(compare=False)
    executor: Executor = field(compare=False)


def cancel_reason(due: datetime) -> str:
    """The error recorded with a run stopped by ``cancel_other``."""
    return f"cancelled: the next fire ({iso_z(due)}) came due while it ran (overlap cancel_other)"


def not_stopped(finish: Finish, due: datetime) -> Finish:
    """The end of a ``cancel_other`` run its executor could not stop (a thread), saying so: a
    note on the run (after its own error, if any) and on the fires passed over meanwhile."""
    note = (
        f"not stopped when the next fire ({iso_z(due)}) came due: the executor cannot stop this run "
        "(a thread); that fire waited for its end (overlap cancel_other)"
    )
    outcome = finish.outcome
    noted = Outcome(outcome.status, error=f"{outcome.error}\n{note}" if outcome.error else note)
    skipped = tuple(
        (t, reason.replace("replaces it)", "runs after it: the run could not be stopped)"))
        for t, reason in finish.skipped
    )
    return replace(finish, outcome=noted, skipped=skipped)


class CancelWatch:
    """The ``cancel_other`` runs of this node, each with the monotonic time its schedule's next
    fire comes due (placed by the database clock when the run started); :meth:`cancel_due` asks
    the executor to stop those whose time came. Used by the engine's loop thread only."""

    def __init__(self) -> None:
        self._heap: list[_Watched] = []
        #: Runs in the heap, and those of them that ended (taken out lazily, when they surface).
        self._live: set[int] = set()
        self._ended: set[int] = set()
        #: Runs the executor could not stop, with the fire that came due and its monotonic time.
        self._refused: dict[int, tuple[datetime, float]] = {}
        #: Schedules whose executor could not stop a run (warned once each).
        self._warned: set[str] = set()

    def watch(self, claim: Claim, executor: Executor, next_after: NextAfter, now: datetime, now_mono: float) -> None:
        """Stop ``claim``'s run, started at ``now`` (database clock, at monotonic ``now_mono``),
        when the first fire after its start comes: a late start is not stopped at once by a fire
        that passed before it. A trigger that fails to answer leaves the run unwatched (it is
        past handing to its executor; its end plans, and parks, as any)."""
        if claim.run_id is None:
            return
        try:
            due = next_after(max(claim.scheduled_for, now))
        except Exception:
            log.exception("%s: cannot compute the fire that would stop run %s", claim.spec.name, claim.run_id)
            return
        if due is None:
            return
        at = now_mono + (due - now).total_seconds()
        heapq.heappush(self._heap, _Watched(at, claim.run_id, claim, due, executor))
        self._live.add(claim.run_id)

    def ended(self, run_id: int, arrived: float) -> datetime | None:
        """The run reported its end (at monotonic ``arrived``): no need to stop it. Returns the
        fire that came due while it ran if the executor could not stop it (:func:`not_stopped`),
        else ``None`` (also when it had ended before that fire, its end not yet seen)."""
        if run_id in self._live:
            self._live.discard(run_id)
            self._ended.add(run_id)
        refused = self._refused.pop(run_id, None) if self._refused else None
        if refused is None or arrived < refused[1]:
            return None
        return refused[0]

    def earliest(self) -> float | None:
        self._sweep()
        return self._heap[0].at if self._heap else None

    def cancel_due(self, now_mono: float) -> int:
        """Ask the executors to stop the runs whose schedule's next fire came; how many they stopped."""
        stopped = 0
        self._sweep()
        while self._heap and self._heap[0].at <= now_mono:
            entry = heapq.heappop(self._heap)
            self._live.discard(entry.run_id)
            if self._cancel(entry):
                stopped += 1
            self._sweep()
        return stopped

    def _cancel(self, entry: _Watched) -> bool:
        name = entry.claim.spec.name
        try:
            done = entry.executor.cancel(entry.run_id, cancel_reason(entry.due))
        except Exception:
            log.exception("%s: the executor failed to stop run %s", name, entry.run_id)
            done = False
        if done:
            log.info("%s: run %s stopped: its next fire %s came due", name, entry.run_id, iso_z(entry.due))
            return True
        self._refused[entry.run_id] = (entry.due, entry.at)
        if name not in self._warned:
            self._warned.add(name)
            log.warning(
                "%s: overlap cancel_other, but the executor cannot stop run %s (thread mode, or it is not "
                "stoppable); the next fire waits for it to end",
                name,
                entry.run_id,
            )
        return done

    def _sweep(self) -> None:
        """Drop the ended runs at the top of the heap."""
        while self._heap and self._heap[0].run_id in self._ended:
            self._ended.discard(heapq.heappop(self._heap).run_id)

    def __len__(self) -> int:
        """Runs watched (not ended, not yet asked to stop)."""
        return len(self._live)
