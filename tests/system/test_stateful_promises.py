"""The promises of docs/claim-protocol.md under random interleavings (issue #40): a hypothesis
state machine drives, on one fake clock, 1-3 real engines sharing a store, every admin operation
(add, update of each option, enable, disable, pause, resume, trigger, backfill with ranges past
and future, remove, import --replace, apply with and without --prune), node kills, graceful
stops, restarts and declarations of death, and (on PostgreSQL) an operator's console holding a
schedule's row locked (``SELECT ... FOR UPDATE``) across steps, and checks after every step that

- no run started before its fire time (by the fake clock);
- a ``skip``/``buffer_*``/``cancel_other`` schedule never had two runs at once, and a buffered
  backfill ran alone;
- no (schedule, fire time, attempt) ran twice;
- every run of a schedule that still exists has its history row (same fire, attempt, node);
- no history row says ``succeeded`` for anything the test did not end as a success;
- no pass of an engine failed, and no node waited for the console's lock (a lock timeout in its
  log): the admin's own writes on that row may fail with it, nothing else.

Runs are observed by the executors the test gives the engines (tests/support/stateful_model.py), not read
back from the store. Always on the memory store; on SQLite, PostgreSQL and MySQL with fewer
examples. A failure prints the steps (and a ``@reproduce_failure`` blob) to replay it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Protocol

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import Connection, select

from tests.support.stateful_model import LONGEST_START_LEAD, Ledger, ModelExecutor, ModelMembership
from tests.support.stores import T0, Ticker, make_store
from tickwork.abc import Store
from tickwork.admin import Admin, load_config
from tickwork.config import Config
from tickwork.engine import Engine, EngineSettings
from tickwork.errors import (
    ConfigError,
    ScheduleExistsError,
    ScheduleNotFoundError,
    StoreError,
    TickworkError,
    TriggerError,
)
from tickwork.plugin.manager import PluginManager, plugin_manager_for
from tickwork.sql.schema import schedules
from tickwork.sql.store import SQLStore
from tickwork.structures import FAILING, Overlap, RunStatus
from tickwork.testing import FakeClock, MemoryStore

NODES = ("n1", "n2", "n3")
#: Two names: most writes then land on a schedule that exists, often one whose run is in flight.
NAMES = ("a", "b")
#: Validated by the admin (the local executor imports it); never run: the engines' executor is the model's.
TARGET = "tests.support.jobs_for_tests:record"
EXPRESSIONS = ("* * * * * *", "*/2 * * * * *", "*/3 * * * * *")

#: A longer hunt than the suite's: ``TICKWORK_STATEFUL_EXAMPLES=5000 pytest tests/system/test_stateful_promises.py``
#: (the SQL stores get a tenth of it, and no test timeout applies).
HUNT = int(os.environ.get("TICKWORK_STATEFUL_EXAMPLES", "0"))
MEMORY = settings(
    # 200 examples take about 10 s; before the fix of 761f349 about 7 in 10 runs of 100 found the
    # admin write that gave a started run back (and every run the early backfill of cd23ce8).
    max_examples=HUNT or 200,
    stateful_step_count=60,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
#: The SQL stores answer in a millisecond or so per statement: fewer examples, the same steps.
SQL = settings(MEMORY, max_examples=HUNT // 10 or 20)
#: Room for hypothesis to shrink a failure (it gives up after 5 minutes) before pytest's timeout.
TIMEOUT = pytest.mark.timeout(0 if HUNT else 600)


@cache
def admin_config() -> tuple[Config, PluginManager]:
    """The admin's configuration (defaults: the local executor) and plugins, loaded once."""
    config = load_config({})
    return config, plugin_manager_for(config)


# -- the data of the rules ------------------------------------------------------------------------

NAME = st.sampled_from(NAMES)
#: Where a node's lines are logged.
WATCHED_LOGGERS = ("tickwork.engine", "tickwork.store", "tickwork.membership")
NODE = st.sampled_from(NODES)
#: Fake seconds per step: 0.05 to 5 in steps of 0.05, so fire times, start deadlines (0.5 s) and
#: claim leads are hit exactly as often as passed.
SECONDS = st.integers(1, 100).map(lambda n: round(n * 0.05, 2))
#: Fake seconds of a brief step.
MOMENT = st.integers(1, 20).map(lambda n: round(n * 0.05, 2))
#: How a tick ends the runs in flight before time passes: not at all (as often as the two others
#: together: a write while a run is in flight is where a started run was given back), or all of
#: them as successes or as failures.
ENDS = st.sampled_from(["none", "succeed", "fail", "none"])
#: Claiming ahead is where a run can look unstarted (the fenced start, the takeover).
LOOKAHEAD = st.sampled_from([0.0, 1.0, 2.0])
START_LEAD = st.sampled_from([0.0, 0.05, LONGEST_START_LEAD])

#: Values of each schedule option an update may set; ``start_at``/``end_at`` are seconds from now.
OPTION_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "expression": st.sampled_from(EXPRESSIONS),
    "overlap": st.sampled_from(Overlap.choices()),
    "enabled": st.booleans(),
    "timeout": st.sampled_from([2, 7, 300]),
    "retries": st.sampled_from([0, 1, 2]),
    "retry_backoff": st.sampled_from([0, 0.5, 2]),
    "misfire": st.sampled_from(["skip", "once", "all"]),
    "misfire_grace": st.sampled_from([1, 4, 30]),
    "max_catchup": st.sampled_from([None, 1, 3]),
    "max_runs": st.sampled_from([None, 2, 5]),
    "on_finish": st.sampled_from(["keep", "remove"]),
    "on_abandon": st.sampled_from(["skip", "rerun"]),
    "pause_after_failures": st.sampled_from([None, 1, 2]),
    "jitter": st.sampled_from([0, 0.4]),
    "start_at": st.sampled_from([None, 2.5, 6.0]),
    "end_at": st.sampled_from([None, 8.0, 30.0]),
    "also": st.sampled_from([(), ("*/5 * * * * *",)]),
    # Whole odd minutes (an exclusion excludes the minutes its cron matches: one with a seconds
    # field matches every minute, which a disabled schedule accepts and then cannot be enabled).
    "exclude": st.sampled_from([(), ("1-59/2 * * * *",)]),
    "tz": st.sampled_from(["UTC", "Europe/Oslo"]),
    "args": st.sampled_from([{}, {"_tickwork_mode": "thread"}]),
    "target": st.sampled_from([TARGET, "tests.support.jobs_for_tests:boom"]),
    "max_concurrent": st.sampled_from([None, 1, 2]),
    "concurrency_key": st.sampled_from([None, "k"]),
    "concurrency_limit": st.sampled_from([None, 1, 2]),
}


class Op(Protocol):
    def apply(self, m: PromisesMachine) -> None: ...


@dataclass(frozen=True)
class Add:
    name: str
    expression: str
    overlap: str = "skip"
    retries: int = 0
    on_abandon: str = "skip"

    def apply(self, m: PromisesMachine) -> None:
        try:
            m.admin.add(
                self.name,
                self.expression,
                TARGET,
                check_nodes=False,
                overlap=self.overlap,
                retries=self.retries,
                retry_backoff=0.5,
                on_abandon=self.on_abandon,
            )
        except ScheduleExistsError:
            return
        m.ledger.created(self.name, self.overlap)


@dataclass(frozen=True)
class Update:
    name: str
    option: str
    value: Any

    def apply(self, m: PromisesMachine) -> None:
        value = self.value
        if self.option in ("start_at", "end_at") and value is not None:
            value = m.clock() + timedelta(seconds=value)
        with m.expecting(ScheduleNotFoundError, ConfigError, TriggerError):
            m.admin.update(self.name, check_nodes=False, **{self.option: value})
            if self.option == "overlap":
                m.ledger.defined(self.name, value)


@dataclass(frozen=True)
class Enable:
    name: str

    def apply(self, m: PromisesMachine) -> None:
        with m.expecting(ScheduleNotFoundError):
            m.admin.enable(self.name)


@dataclass(frozen=True)
class Disable:
    name: str

    def apply(self, m: PromisesMachine) -> None:
        with m.expecting(ScheduleNotFoundError):
            m.admin.disable(self.name)


@dataclass(frozen=True)
class Pause:
    name: str
    until: float | None

    def apply(self, m: PromisesMachine) -> None:
        until = None if self.until is None else timedelta(seconds=self.until)
        with m.expecting(ScheduleNotFoundError):
            m.admin.pause(self.name, "stateful test", until=until, by="test")


@dataclass(frozen=True)
class Resume:
    name: str

    def apply(self, m: PromisesMachine) -> None:
        with m.expecting(ScheduleNotFoundError):
            m.admin.resume(self.name)


@dataclass(frozen=True)
class Trigger:
    name: str

    def apply(self, m: PromisesMachine) -> None:
        with m.expecting(ScheduleNotFoundError):
            if m.store.get(self.name).spec.enabled:
                m.admin.trigger(self.name)
                return
            with pytest.raises(TickworkError, match="is disabled"):  # a disabled schedule never runs
                m.admin.trigger(self.name)


@dataclass(frozen=True)
class Backfill:
    """Fire times from ``start`` seconds from now, for ``length`` seconds: past, or reaching
    into the future (capped at now), or all in the future (refused)."""

    name: str
    start: float
    length: float
    overlap: str = "buffer_all"
    rerun: bool = False

    def apply(self, m: PromisesMachine) -> None:
        now = m.clock()
        start = now + timedelta(seconds=self.start)
        try:
            report = m.admin.backfill(
                self.name, start, start + timedelta(seconds=self.length), overlap=self.overlap, rerun=self.rerun
            )
        except ScheduleNotFoundError:
            m.absent(self.name)
            return
        except ConfigError:
            # Refused only for a range that does not start in the past: a backfill never runs a
            # fire early, and a fire to come runs at its time.
            assert start >= now, f"a backfill starting {-self.start:g}s ago was refused"
            return
        m.ledger.queued(self.name, report.queued, self.overlap)


@dataclass(frozen=True)
class Remove:
    name: str

    def apply(self, m: PromisesMachine) -> None:
        with m.expecting(ScheduleNotFoundError):
            m.admin.remove(self.name)
            m.ledger.removed(self.name)


@dataclass(frozen=True)
class ImportReplace:
    """``tickwork jobs add --from FILE --replace``: each schedule created or replaced, at once."""

    schedules: tuple[tuple[str, str, str], ...]  # (name, expression, overlap)

    def apply(self, m: PromisesMachine) -> None:
        m.ledger.follow()
        existed = set(m.ledger.live)
        m.admin.add_many(
            [{"name": n, "expression": e, "target": TARGET, "overlap": o} for n, e, o in self.schedules],
            replace=True,
            check_nodes=False,
        )
        for name, _, overlap in self.schedules:
            if name in existed:
                m.ledger.defined(name, overlap)
            else:
                m.ledger.created(name, overlap)


@dataclass(frozen=True)
class Apply:
    """``tickwork apply FILE [--prune]``: the schedules of a file, each added, changed (its state
    kept) or left as it is, and with ``prune`` every other one removed, in one transaction."""

    schedules: tuple[tuple[str, str, str], ...]  # (name, expression, overlap)
    prune: bool

    def apply(self, m: PromisesMachine) -> None:
        m.ledger.follow()
        plan = m.admin.apply(
            [{"name": n, "expression": e, "target": TARGET, "overlap": o} for n, e, o in self.schedules],
            prune=self.prune,
            check_nodes=False,
            by="stateful test",
        )
        overlaps = {name: overlap for name, _, overlap in self.schedules}
        for name in plan.remove:
            m.ledger.removed(name)
        for spec in plan.add:
            m.ledger.created(spec.name, overlaps[spec.name])
        for name in (*(c.name for c in plan.change), *plan.adopt, *plan.unchanged):
            m.ledger.defined(name, overlaps[name])


@dataclass(frozen=True)
class Revert:
    """``tickwork jobs revert NAME --to N``: an earlier definition again, as a new version."""

    name: str
    to: int

    def apply(self, m: PromisesMachine) -> None:
        with m.expecting(ScheduleNotFoundError, ConfigError, TriggerError):
            info = m.admin.revert(self.name, self.to, by="stateful test", check_nodes=False)
            event("revert: done")
            m.ledger.defined(self.name, Overlap(info.spec.overlap).value)


@dataclass(frozen=True)
class Rerun:
    """``tickwork jobs rerun NAME RUN``: the ``pick``-th failed run of ``name`` again, as its next
    attempt (refused when that fire's latest attempt did not fail)."""

    name: str
    pick: int

    def apply(self, m: PromisesMachine) -> None:
        m.ledger.follow()
        if self.name not in m.ledger.live:
            return
        failed = m.store.find_runs(schedule=self.name, status=list(FAILING), limit=20)
        if not failed:
            return
        run = failed[self.pick % len(failed)]
        try:
            report = m.admin.rerun(self.name, run.id)
        except ScheduleNotFoundError:
            m.absent(self.name)
            return
        except StoreError:
            raise  # the console's lock, when it holds one (admin_op); anything else fails the test
        except TickworkError as exc:
            assert "is not failed" in str(exc), exc  # a later attempt ran, or it was rerun already
            return
        event(f"rerun: {'queued' if report.queued else 'not queued'}")
        m.ledger.queued(self.name, report.queued, "buffer_all")


@dataclass(frozen=True)
class Release:
    """``tickwork jobs release NAME``: hand-offs no worker started, cancelled (fenced by status:
    a started run is never released)."""

    name: str

    def apply(self, m: PromisesMachine) -> None:
        with m.expecting(ScheduleNotFoundError):
            for run in m.admin.release(self.name, by="stateful test"):
                assert run.status is RunStatus.CANCELLED, run


def made(kind: Callable[..., Op], **fields: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``kind(**fields)``, each field drawn in turn; printed as the op's own repr, with the names
    of its fields (``st.builds`` would print its arguments by position)."""

    @st.composite
    def draw_op(draw: st.DrawFn) -> Op:
        return kind(**{field: draw(values) for field, values in fields.items()})

    return draw_op()


ADDS: st.SearchStrategy[Add] = made(
    Add,
    name=NAME,
    expression=st.sampled_from(EXPRESSIONS),
    overlap=st.sampled_from(Overlap.choices()),
    retries=st.sampled_from([0, 1]),
    on_abandon=st.sampled_from(["skip", "rerun"]),
)


@st.composite
def updates(draw: st.DrawFn) -> Update:
    """One option at a time, each as likely as the others."""
    name = draw(NAME)
    option = draw(st.sampled_from(sorted(OPTION_VALUES)))
    return Update(name, option, draw(OPTION_VALUES[option]))


#: Every admin operation by kind, each kind as likely as the others (a ``one_of`` of these would
#: flatten the updates into one choice per option).
ADMIN_KINDS: dict[str, st.SearchStrategy[Op]] = {
    "update": updates(),
    "disable": made(Disable, name=NAME),
    "enable": made(Enable, name=NAME),
    "pause": made(Pause, name=NAME, until=st.sampled_from([None, 1.5, 4.0])),
    "resume": made(Resume, name=NAME),
    "trigger": made(Trigger, name=NAME),
    "backfill": made(
        Backfill,
        name=NAME,
        start=st.integers(-12, 4).map(float),
        length=st.integers(1, 10).map(float),
        overlap=st.sampled_from(["buffer_all", "allow"]),
        rerun=st.booleans(),
    ),
    "import --replace": made(
        ImportReplace,
        schedules=st.lists(
            st.tuples(NAME, st.sampled_from(EXPRESSIONS), st.sampled_from(Overlap.choices())),
            min_size=1,
            max_size=len(NAMES),
            unique_by=lambda s: s[0],
        ).map(tuple),
    ),
    "apply": made(
        Apply,
        schedules=st.lists(
            st.tuples(NAME, st.sampled_from(EXPRESSIONS), st.sampled_from(Overlap.choices())),
            min_size=1,
            max_size=len(NAMES),
            unique_by=lambda s: s[0],
        ).map(tuple),
        prune=st.booleans(),
    ),
    "remove": made(Remove, name=NAME),
    "add": ADDS,
    "revert": made(Revert, name=NAME, to=st.integers(1, 4)),
    "rerun": made(Rerun, name=NAME, pick=st.integers(0, 5)),
    "release": made(Release, name=NAME),
}


@st.composite
def admin_ops(draw: st.DrawFn) -> Op:
    return draw(ADMIN_KINDS[draw(st.sampled_from(list(ADMIN_KINDS)))])


@dataclass(frozen=True)
class Start:
    """A node (re)starts; one killed releases what it left behind first, as ``Node.open`` does."""

    node: str
    lookahead: float
    start_lead: float

    def apply(self, m: PromisesMachine) -> None:
        m.start_node(self.node, self.lookahead, self.start_lead)


@dataclass(frozen=True)
class Kill:
    node: str

    def apply(self, m: PromisesMachine) -> None:
        m.kill(self.node)


@dataclass(frozen=True)
class Stop:
    node: str

    def apply(self, m: PromisesMachine) -> None:
        m.stop(self.node)


@dataclass(frozen=True)
class DeclareDead:
    node: str

    def apply(self, m: PromisesMachine) -> None:
        m.declare_dead(self.node)


NODE_EVENTS: dict[str, st.SearchStrategy[Op]] = {
    "start": made(Start, node=NODE, lookahead=LOOKAHEAD, start_lead=START_LEAD),
    "kill": made(Kill, node=NODE),
    "stop": made(Stop, node=NODE),
    "declare dead": made(DeclareDead, node=NODE),
}


@st.composite
def node_events(draw: st.DrawFn) -> Op:
    return draw(NODE_EVENTS[draw(st.sampled_from(list(NODE_EVENTS)))])


# -- the stores -------------------------------------------------------------------------------------


class Bench(Protocol):
    #: Whether an operator's console may hold a schedule's row locked (a SQL store with row locks).
    row_locks: bool

    def fresh(self) -> tuple[FakeClock, Store]:
        """A store with nothing in it, and the fake clock its database clock follows."""
        ...


class MemoryBench:
    row_locks = False

    def fresh(self) -> tuple[FakeClock, Store]:
        clock = FakeClock(T0)
        store = MemoryStore(clock=clock)
        store.open()
        return clock, store


@dataclass
class SQLBench:
    """One database for every example (a database each would cost more than the example):
    emptied, and the clock moved on to a whole minute, before each."""

    store: Store
    clock: FakeClock
    row_locks: bool = False

    def fresh(self) -> tuple[FakeClock, Store]:
        for schedule in self.store.list_schedules():
            self.store.remove(schedule.name)  # its history and backfill queue with it
        for node in self.store.nodes():
            self.store.remove_node(node.id)
        later = self.clock() + timedelta(minutes=2)
        self.clock.set(later.replace(second=0, microsecond=0))
        return self.clock, self.store


# -- the machine ------------------------------------------------------------------------------------


class EngineErrors(logging.Handler):
    """ERROR lines of the engine: a pass that failed, a run an executor refused, a parked schedule;
    and any line of a node saying a statement waited for a lock until its timeout (the console's:
    every path of a node passes a locked row over)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.levelno >= logging.ERROR and record.name == "tickwork.engine":
            self.lines.append(f"engine error: {message}")
        elif "lock timeout" in message or "Lock wait timeout" in message:
            self.lines.append(f"a node waited for a lock: {record.name}: {message}")


@dataclass
class Slot:
    """One node's place in the cluster: ``absent`` (never started, or stopped), ``alive`` or
    ``killed`` (its process gone without a word, its record still there)."""

    node: str
    state: str = "absent"
    engine: Engine | None = None
    membership: ModelMembership | None = None


class Expecting:
    """``with m.expecting(...)``: these errors are an answer of the admin, not a failure; a
    schedule not found must be one the store does not have."""

    def __init__(self, machine: PromisesMachine, errors: tuple[type[Exception], ...]) -> None:
        self.machine, self.errors = machine, errors

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        if exc is None or not isinstance(exc, self.errors):
            return False
        if isinstance(exc, ScheduleNotFoundError):
            for name in exc.names:
                self.machine.absent(name)
        return True


class PromisesMachine(RuleBasedStateMachine):
    bench: ClassVar[Bench]

    def __init__(self) -> None:
        super().__init__()
        self.clock, self.store = self.bench.fresh()
        self.ticker = Ticker()
        self.ledger = Ledger(self.clock, self.store)
        config, manager = admin_config()
        self.admin = Admin(config, manager=manager, store=self.store)
        self.slots = {node: Slot(node) for node in NODES}
        self.errors = EngineErrors()
        for name in WATCHED_LOGGERS:
            logging.getLogger(name).addHandler(self.errors)
        #: The operator's console: a connection of its own holding a schedule's row locked.
        self.console: Connection | None = None

    def teardown(self) -> None:
        self.console_lets_go()
        for name in WATCHED_LOGGERS:
            logging.getLogger(name).removeHandler(self.errors)

    def expecting(self, *errors: type[Exception]) -> Expecting:
        return Expecting(self, errors)

    def absent(self, name: str) -> None:
        """The store says ``name`` is no schedule: the model must agree."""
        self.ledger.follow()
        assert name not in self.ledger.live, f"{name} exists, yet the store did not find it"

    def alive(self) -> list[Slot]:
        return [s for s in self.slots.values() if s.state == "alive"]

    # -- nodes ----------------------------------------------------------------------------------------

    def _start(self, node: str, lookahead: float, lead: float) -> None:
        slot = self.slots[node]
        if slot.state == "killed":
            # As Node.open does: a node restarting under its id releases what it left behind.
            self.store.release_node(node, f"node {node} restarted; run abandoned")
        membership = ModelMembership(self.ticker)
        membership.start(self.store, node)
        engine_settings = EngineSettings(
            node_id=node,
            lookahead=lookahead,
            start_lead=lead,
            # Backfills and the reconcile every 2 s; the hard timeout never within an example:
            # the executors report their timeouts themselves, as executors must.
            reap_interval=2.0,
            hard_timeout_grace=3600.0,
            history_retention_days=0,
        )
        slot.engine = Engine(
            self.store,
            {"local": ModelExecutor(node, self.ledger)},
            membership,
            engine_settings,
            clock=self.clock,
            monotonic=self.ticker,
        )
        slot.membership, slot.state = membership, "alive"
        self.ledger.learnt(node)  # a new process knows nothing of its predecessor's death

    def _pass(self, slot: Slot) -> None:
        assert slot.engine is not None and slot.membership is not None
        if slot.membership.beat():
            self.ledger.learnt(slot.node)
        slot.engine.run_once()

    def _advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.ticker.advance(seconds)
        self.ledger.time_out()

    @initialize(
        lookahead=LOOKAHEAD,
        lead=START_LEAD,
        schedules=st.lists(ADDS, min_size=1, max_size=2, unique_by=lambda add: add.name),
    )
    def begin(self, lookahead: float, lead: float, schedules: list[Add]) -> None:
        self._start("n1", lookahead, lead)
        for add in schedules:
            add.apply(self)

    @precondition(lambda self: bool(self.alive()))
    @rule(node=NODE)
    def pass_of(self, node: str) -> None:
        slot = self.slots[node]
        if slot.state == "alive":
            self._pass(slot)

    @rule(seconds=SECONDS)
    def advance(self, seconds: float) -> None:
        self._advance(seconds)

    @precondition(lambda self: bool(self.alive()))
    @rule(seconds=SECONDS, end=ENDS)
    def tick(self, seconds: float, end: str) -> None:
        """The cluster at work: the runs going end (or not), time passes, every node makes a pass."""
        self._tick(seconds, end)

    @precondition(lambda self: bool(self.alive()))
    @rule(seconds=MOMENT, end=ENDS)
    def tick_briefly(self, seconds: float, end: str) -> None:
        """The same within a second: a claim lead, a start lead, a start deadline."""
        self._tick(seconds, end)

    def _tick(self, seconds: float, end: str) -> None:
        if end != "none":
            for execution in self.ledger.in_flight():
                self.ledger.end(execution, RunStatus.SUCCEEDED if end == "succeed" else RunStatus.FAILED)
        self._advance(seconds)
        for slot in self.alive():
            self._pass(slot)

    @precondition(lambda self: bool(self.ledger.in_flight()))
    @rule(which=st.integers(0, 7), success=st.booleans())
    def end_run(self, which: int, success: bool) -> None:
        running = self.ledger.in_flight()
        self.ledger.end(running[which % len(running)], RunStatus.SUCCEEDED if success else RunStatus.FAILED)

    @rule(op=admin_ops())
    def admin_op(self, op: Op) -> None:
        if self.console is None:
            op.apply(self)
            return
        # The admin's writes wait for the console's lock like any session's, and fail at the
        # store's lock_timeout: an answer, not a broken promise (the checks after it say so).
        with self.expecting(StoreError):
            op.apply(self)

    @precondition(lambda self: self.bench.row_locks and self.console is None)
    @rule(name=NAME)
    def console_locks(self, name: str) -> None:
        """``SELECT ... FOR UPDATE`` on one schedule's row in a console, held across the steps
        until :meth:`console_lets_go` (a ``psql`` session left open)."""
        assert isinstance(self.store, SQLStore)
        console = self.store.engine.connect()
        row = select(schedules.c.id).where(schedules.c.name == name)
        schedule_id = console.scalar(row)
        console.rollback()
        if schedule_id is None:
            console.close()
            return
        # By primary key: a locking read by name would lock every row it scanned on MySQL.
        console.execute(select(schedules.c.id).where(schedules.c.id == schedule_id).with_for_update()).all()
        self.console = console
        event(f"console locks {name}")

    @precondition(lambda self: self.console is not None)
    @rule()
    def console_lets_go(self) -> None:
        if self.console is not None:
            self.console.rollback()
            self.console.close()
            self.console = None

    @rule(event=node_events())
    def node_event(self, event: Op) -> None:
        event.apply(self)

    def start_node(self, node: str, lookahead: float, lead: float) -> None:
        if self.slots[node].state != "alive":
            self._start(node, lookahead, lead)

    def kill(self, node: str) -> None:
        """``kill -9``: the engine is dropped without a word; its jobs die with it."""
        slot = self.slots[node]
        if slot.state == "alive":
            self.ledger.cut_off(node)
            slot.state, slot.engine, slot.membership = "killed", None, None

    def stop(self, node: str) -> None:
        """A graceful stop, as Node's way out: give back held fires, record what ended, release
        the rest (the jobs still going past the grace die with the process), leave."""
        slot = self.slots[node]
        if slot.state != "alive":
            return
        assert slot.engine is not None and slot.membership is not None
        if self.console is None:
            slot.engine.shutdown(0.0)
        else:
            # Giving back held fires waits for the console's lock (only at a stop: what it cannot
            # give back is taken over at its deadline, or released just below).
            with self.expecting(StoreError):
                slot.engine.shutdown(0.0)
        self.ledger.cut_off(node)
        self.store.release_node(node, f"node {node} stopped before the run ended")
        slot.membership.stop()
        slot.state, slot.engine, slot.membership = "absent", None, None

    def declare_dead(self, node: str) -> None:
        """What a live node's membership does to one whose heartbeat is stale: a killed node, or
        a live one that froze (it learns it at its next heartbeat)."""
        slot = self.slots[node]
        if slot.state == "absent":
            return
        released = self.store.release_dead_node(node, 0.0, f"node {node} declared dead by the stateful test")
        if released is not None and slot.state == "alive":
            self.ledger.declared_dead(node)

    # -- the promises -------------------------------------------------------------------------------

    @invariant()
    def promises_kept(self) -> None:
        problems = [*self.ledger.violations, *self.ledger.history_problems(), *self.errors.lines]
        assert not problems, "\n".join(problems)


def run_machine(bench: Bench, how: settings) -> None:
    machine = type("Promises", (PromisesMachine,), {"bench": bench})
    run_state_machine_as_test(machine, settings=how)


@TIMEOUT
def test_the_protocols_promises_hold_on_the_memory_store() -> None:
    run_machine(MemoryBench(), MEMORY)


@TIMEOUT
@pytest.mark.parametrize(
    ("kind", "claim"), [("sqlite", "optimistic"), ("postgres", "skip-locked"), ("mysql", "skip-locked")]
)
def test_the_protocols_promises_hold_on_sql_stores(
    kind: str, claim: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    clock = FakeClock(T0)
    # On PostgreSQL an operator's console locks rows (console_locks): the admin's writes on such a
    # row wait for it until lock_timeout, kept short here (MySQL counts it in whole seconds).
    options = {"lock_timeout": 0.05} if kind == "postgres" else {}
    store = make_store(kind, claim, request, tmp_path, clock=clock, **options)
    try:
        run_machine(SQLBench(store, clock, row_locks=kind == "postgres"), SQL)
    finally:
        store.close()
