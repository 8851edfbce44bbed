"""The model behind tests/system/test_stateful_promises.py: what the test sees of a cluster on a fake clock.

Executions are observed, never inferred from the store: every node's executor is a
:class:`ModelExecutor` that records each run it is handed (node, schedule, fire time, attempt,
run id, fake-clock start) in a :class:`Ledger` and keeps it "in flight" until the state machine
ends it (success, failure), the executor's own timeout ends it, or its node is killed. The ledger
judges each start as it happens (never early, never twice, one at a time where the overlap says
so) and, after every step, the store's history against what ran (:meth:`Ledger.history_problems`).

The promises are those of docs/claim-protocol.md; what the protocol deliberately does not promise
is left out of the checks, each where it is decided:

- a schedule removed takes its history with it (``Admin.remove``), so its executions are not
  looked for there; a name added again is a new schedule (an :class:`Incarnation`); a fire whose
  start was recorded ahead of its time (``start_lead``) is a started run, and runs at its time
  even if its schedule was removed in between (as the removed schedule's);
- a node declared dead while it still runs (a freeze the node has not noticed yet) keeps running
  what it had started, and may start fires whose start it recorded ahead, until its heartbeat
  tells it; those executions are ``orphaned``: the others recorded them ``abandoned`` and
  may run the schedule's next fires beside them ("A node declared dead");
- backfilled runs do not hold their schedule's claim: a scheduled fire may run beside one, an
  ``allow`` backfill beside anything, and a ``buffer_all`` backfill only alone
  (docs/cluster.md#backfill);
- ``overlap = "allow"`` runs side by side by definition: a schedule that ever had it is left out
  of the one-at-a-time check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tickwork.abc import Executor, Membership, Store
from tickwork.structures import JobCall, Outcome, RunStatus

#: Overlap choices under which a schedule's claim lasts until its run ended: one run at a time.
#: (``cancel_other`` too: the run is stopped before the next fire is claimed.)
ONE_AT_A_TIME = frozenset({"skip", "buffer_one", "buffer_all", "cancel_other"})
#: The module whose callbacks the engine hands an executor (``Runs``' outcome queue,
#: ``tickwork.engine.outcomes.Outcomes``): every run, scheduled or backfilled, goes through it.
#: ``JobCall.backfill`` tells the two apart (the one-at-a-time rules differ).
SCHEDULED = "tickwork.engine.outcomes"
#: Seconds of the fake monotonic clock between two heartbeats of a node (the membership default).
HEARTBEAT_INTERVAL = 1.0
#: The longest ``start_lead`` the test gives a node: how long before its time a fire's start may
#: be recorded, and so how long before it its schedule may be removed while it still runs.
LONGEST_START_LEAD = 0.3


@dataclass(eq=False)
class Incarnation:
    """One life of a schedule name, from its creation to its removal."""

    name: str
    number: int
    #: Every overlap choice it had (a run started under one may still go on under the next).
    overlaps: set[str] = field(default_factory=set)
    removed: bool = False
    #: When the model learnt of its removal (fake clock).
    removed_at: datetime | None = None

    @property
    def one_at_a_time(self) -> bool:
        return self.overlaps <= ONE_AT_A_TIME

    def __str__(self) -> str:
        return f"{self.name}#{self.number}"


@dataclass(eq=False)
class Execution:
    """A run an executor was handed, as the test saw it."""

    incarnation: Incarnation
    node: str
    run_id: int
    scheduled_for: datetime
    attempt: int
    started: datetime
    timeout: float
    backfill: bool
    on_done: Callable[[Outcome], None]
    ended: datetime | None = None
    #: The status the test ended it with; ``None`` while it runs, or when its node was killed.
    outcome: RunStatus | None = None
    #: Its node was declared dead while it ran, or it started before the node learnt that it was.
    orphaned: bool = False

    @property
    def in_flight(self) -> bool:
        return self.ended is None

    def __str__(self) -> str:
        kind = "backfilled run" if self.backfill else "run"
        if self.ended is None:
            state = "running"
        else:
            state = f"{'cut off' if self.outcome is None else self.outcome.value} {self.ended:%H:%M:%S.%f}"
        return (
            f"{kind} {self.run_id} of {self.incarnation} for {self.scheduled_for:%H:%M:%S.%f} attempt {self.attempt} "
            f"on {self.node}, started {self.started:%H:%M:%S.%f} ({state}{', orphaned' if self.orphaned else ''})"
        )


class Ledger:
    """Every execution of one example, what the model knows of the schedules, and the promises
    broken so far (judged as each run starts)."""

    def __init__(self, clock: Callable[[], datetime], store: Store) -> None:
        self.clock = clock
        self.store = store
        self.executions: list[Execution] = []
        self.violations: list[str] = []
        #: The current incarnation of each schedule name that exists.
        self.live: dict[str, Incarnation] = {}
        #: The last removed incarnation of each name.
        self.gone: dict[str, Incarnation] = {}
        self._born: dict[str, int] = {}
        #: The backfill overlaps each (schedule, fire time) was queued with.
        self.backfill_overlaps: dict[tuple[Incarnation, datetime], set[str]] = {}
        #: Nodes declared dead that have not learnt it yet (their heartbeat has not told them).
        self.unaware: set[str] = set()

    # -- what the admin did ---------------------------------------------------------------------

    def created(self, name: str, overlap: str) -> Incarnation:
        """A schedule ``name`` was created: a new one, whatever had that name before."""
        self.removed(name)
        self._born[name] = self._born.get(name, 0) + 1
        incarnation = self.live[name] = Incarnation(name, self._born[name], {overlap})
        return incarnation

    def defined(self, name: str, overlap: str) -> None:
        """The schedule ``name`` was given (or kept) ``overlap``."""
        self.live[name].overlaps.add(overlap)

    def removed(self, name: str) -> None:
        incarnation = self.live.pop(name, None)
        if incarnation is not None:
            incarnation.removed, incarnation.removed_at = True, self.clock()
            self.gone[name] = incarnation

    def queued(self, name: str, times: Sequence[datetime], overlap: str) -> None:
        incarnation = self.live[name]
        for t in times:
            self.backfill_overlaps.setdefault((incarnation, t), set()).add(overlap)

    def follow(self) -> None:
        """Forget the schedules the engine removed itself (``on_finish = "remove"``)."""
        names = {s.name for s in self.store.list_schedules()}
        for name in [n for n in self.live if n not in names]:
            self.removed(name)

    # -- what the executors saw -----------------------------------------------------------------

    def started(self, node: str, call: JobCall, on_done: Callable[[Outcome], None]) -> None:
        now = self.clock()
        handed_by = getattr(on_done, "__module__", None)
        if handed_by != SCHEDULED:
            self.violations.append(f"run {call.run_id} handed over by {handed_by}, not a part the test knows")
        incarnation = self.live.get(call.schedule)
        row = self.store.get_run(call.run_id)
        recorded = row is not None and (row.schedule, row.scheduled_for, row.attempt) == (
            call.schedule,
            call.scheduled_for,
            call.attempt,
        )
        gone = self.gone.get(call.schedule)
        lead = timedelta(seconds=LONGEST_START_LEAD)
        if not recorded and gone is not None and gone.removed_at and gone.removed_at >= call.scheduled_for - lead:
            # A fire whose start was recorded ahead of its time (start_lead) is a started run:
            # it runs at its time even if its schedule was removed since, with its history.
            incarnation = gone
        elif incarnation is None:
            self.violations.append(f"run {call.run_id} of {call.schedule!r} started on {node}, which is no schedule")
            incarnation = Incarnation(call.schedule, 0, removed=True)
        execution = Execution(
            incarnation,
            node,
            call.run_id,
            call.scheduled_for,
            call.attempt,
            now,
            call.timeout,
            call.backfill,
            on_done,
            orphaned=node in self.unaware,
        )
        self._judge_start(execution)
        self.executions.append(execution)

    def _judge_start(self, new: Execution) -> None:
        if new.started < new.scheduled_for:
            late = (new.scheduled_for - new.started).total_seconds()
            self.violations.append(f"early: {new} ({late:.3f}s before its time)")
        for old in self.executions:
            if (old.incarnation, old.scheduled_for, old.attempt) == (new.incarnation, new.scheduled_for, new.attempt):
                self.violations.append(f"twice: {new}, and before it {old}")
        if new.orphaned:
            return
        beside = [
            old for old in self.executions if old.incarnation is new.incarnation and old.in_flight and not old.orphaned
        ]
        if new.backfill:
            overlaps = self.backfill_overlaps.get((new.incarnation, new.scheduled_for), set())
            # A buffered backfill waits for every running run of its schedule; an `allow` one (or
            # a time queued again with another choice) may run beside them.
            if overlaps == {"buffer_all"}:
                for old in beside:
                    self.violations.append(f"buffered backfill beside another run: {new}, while {old} runs")
        elif new.incarnation.one_at_a_time:
            for old in beside:
                if not old.backfill:
                    self.violations.append(f"two at a time ({new.incarnation.overlaps}): {new}, while {old} runs")

    def cancel(self, node: str, run_id: int) -> bool:
        """The engine stops a ``cancel_other`` run (an executor that can stop its runs)."""
        for execution in self.executions:
            if execution.node == node and execution.run_id == run_id and execution.in_flight:
                self.end(execution, RunStatus.CANCELLED)
                return True
        return False

    # -- what the test does to runs and nodes ---------------------------------------------------

    def in_flight(self, *, node: str | None = None) -> list[Execution]:
        return [e for e in self.executions if e.in_flight and (node is None or e.node == node)]

    def end(self, execution: Execution, status: RunStatus) -> None:
        """End a run the way its executor reports it."""
        execution.ended, execution.outcome = self.clock(), status
        error = None if status is RunStatus.SUCCEEDED else f"{status.value} on purpose (stateful test)"
        execution.on_done(Outcome(status, error=error))

    def time_out(self) -> None:
        """The executor's own timeout: a run past ``call.timeout`` is stopped and reported
        ``timed_out`` (tickwork.abc.Executor), so the engine's hard timeout never has to."""
        now = self.clock()
        for execution in self.in_flight():
            if execution.started + timedelta(seconds=execution.timeout) <= now:
                self.end(execution, RunStatus.TIMED_OUT)

    def cut_off(self, node: str) -> None:
        """``node`` was killed or stopped: its jobs end with it, and nobody reports them."""
        for execution in self.in_flight(node=node):
            execution.ended = self.clock()

    def declared_dead(self, node: str) -> None:
        """The others released a live ``node``'s claims: what it runs now is on its own."""
        for execution in self.in_flight(node=node):
            execution.orphaned = True
        self.unaware.add(node)

    def learnt(self, node: str) -> None:
        """``node``'s heartbeat told it that it had been declared dead."""
        self.unaware.discard(node)

    # -- the history ------------------------------------------------------------------------------

    def history_problems(self) -> list[str]:
        """Every execution of a schedule that exists has its history row (same fire, attempt and
        node); every row ``succeeded`` is a run the test ended as a success."""
        self.follow()
        rows = {(r.schedule, r.id): r for r in self.store.history(limit=1_000_000)}
        problems: list[str] = []
        ran: dict[tuple[str, int], Execution] = {}
        for execution in self.executions:
            incarnation = execution.incarnation
            if incarnation.removed:
                continue
            ran[(incarnation.name, execution.run_id)] = execution
            row = rows.get((incarnation.name, execution.run_id))
            if row is None:
                problems.append(f"no history row for {execution}")
            elif (row.scheduled_for, row.attempt, row.node) != (
                execution.scheduled_for,
                execution.attempt,
                execution.node,
            ):
                problems.append(
                    f"history row {row.id} says {row.scheduled_for:%H:%M:%S.%f} attempt {row.attempt} on {row.node} "
                    f"for {execution}"
                )
        for (name, run_id), row in rows.items():
            if row.status is not RunStatus.SUCCEEDED:
                continue
            found = ran.get((name, run_id))
            if found is None or found.outcome is not RunStatus.SUCCEEDED:
                what = "no execution" if found is None else str(found)
                problems.append(f"history row {run_id} of {name} says succeeded: {what}")
        return problems


class ModelExecutor(Executor):
    """The executor of one node: records each run in the ledger and leaves it running."""

    def __init__(self, node: str, ledger: Ledger) -> None:
        super().__init__()
        self.node = node
        self.ledger = ledger

    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        pass

    def submit(self, call: JobCall, on_done: Callable[[Outcome], None]) -> None:
        self.ledger.started(self.node, call, on_done)

    def cancel(self, run_id: int, reason: str) -> bool:
        return self.ledger.cancel(self.node, run_id)

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        pass


class ModelMembership(Membership):
    """Every node attempts every bucket, is always healthy, and heartbeats only when the state
    machine gives it a pass (no thread: a node that gets no pass is a frozen one). A beat that
    finds its record gone is how the node learns it was declared dead, as
    ``HeartbeatMembership.beat`` does."""

    def __init__(self, monotonic: Callable[[], float]) -> None:
        super().__init__()
        self.monotonic = monotonic
        self.store: Store | None = None
        self.node_id = ""
        self._rejoins = 0
        self._beaten_at = -HEARTBEAT_INTERVAL

    def start(self, store: Store, node_id: str) -> None:
        self.store, self.node_id = store, node_id
        store.heartbeat(node_id)
        self._beaten_at = self.monotonic()

    def beat(self) -> bool:
        """Heartbeat if one is due; whether the node learnt that it had been declared dead."""
        assert self.store is not None
        now = self.monotonic()
        if now - self._beaten_at < HEARTBEAT_INTERVAL:
            return False
        self._beaten_at = now
        if self.store.refresh_heartbeat(self.node_id) is not None:
            return False
        self._rejoins += 1
        self.store.heartbeat(self.node_id)
        return True

    def rejoins(self) -> int:
        return self._rejoins

    def owned_buckets(self) -> Sequence[int] | None:
        return None

    def stop(self) -> None:
        if self.store is not None:
            self.store.remove_node(self.node_id)
