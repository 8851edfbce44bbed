"""The four interfaces every tickwork plugin implements: Store, Trigger, Executor, Membership.

How a fire flows through them (see docs/architecture.md):

1. The engine asks its :class:`Membership` which hash buckets this node owns.
2. It asks the :class:`Store` to claim due schedules in those buckets (the database clock decides
   what is due); each :class:`~tickwork.structures.Claim` carries a fence token and a history row.
3. It hands each claim to the :class:`Executor` named by the schedule, which runs the target and
   reports an :class:`~tickwork.structures.Outcome`.
4. It asks the schedule's :class:`Trigger` for the next fire time and ends the run through
   :meth:`Store.finish`, which only lands while the fence token still matches.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar, Protocol

from ..config.declarations import Section
from ..errors import TickworkError
from ..structures import (
    JobCall,
    Outcome,
    StartVerdict,
)
from .healthrecords import HealthRecords
from .storeroles import ClaimLedger, NodeRegistry, RunHistory
from .storeroles import NextDueSink as NextDueSink
from .tokenstore import TokenStore


class Trigger(ABC):
    """Answers "when is the next fire?" for one expression in one time zone.

    Instances are immutable and cached by the engine, so construction may be expensive (compile the
    expression once) while :meth:`next_after` must be cheap.

    :param expression: the expression in this trigger's syntax
    :param timezone: IANA time zone name the expression is evaluated in
    :raises tickwork.errors.TriggerError: if the expression or zone is invalid; the message names
        the offending part
    """

    #: The ``kind`` under which the trigger is registered (``cron``, ``calendar``, ...).
    kind: ClassVar[str]

    def __init__(self, expression: str, timezone: str = "UTC") -> None:
        self.expression = expression
        self.timezone = timezone

    @classmethod
    def recognizes(cls, expression: str) -> bool:
        """Tell whether ``expression`` looks like this kind's syntax (used when no kind is given).

        Only a cheap syntactic guess: the expression may still be rejected by the constructor.
        """
        return False

    @abstractmethod
    def next_after(self, after: datetime) -> datetime | None:
        """Return the first fire time strictly after ``after``.

        A function of the instant ``after`` alone: the engine keeps its last answer and gives it
        again for the same instant (the schedules sharing a trigger and a fire time ask in turn).

        :param after: an aware datetime (any zone)
        :return: an aware UTC datetime, or ``None`` if the trigger never fires again
        """

    def normalized(self) -> str:
        """Return the canonical form of the expression (defaults to the expression itself)."""
        return self.expression


class NoOptions(Section):
    """The options of a plugin that takes none: any key in its table is refused."""


class BodyFence(Protocol):
    """What an executor asks before it starts a run's body (:meth:`Executor.submit_fenced`):
    whether this node still holds the run's fire. Cheap and thread-safe (no database round trip)."""

    def verdict(self) -> StartVerdict: ...


class Executor(ABC):
    """Runs the target of a fired schedule somewhere and reports how it ended.

    The engine calls :meth:`start` once, then :meth:`submit` for every claimed run, from one
    thread, and finally :meth:`shutdown`. Executors must not block in :meth:`submit` beyond
    handing the call off; they report the end by calling ``on_done`` exactly once per call, from
    any thread. A run that exceeds ``call.timeout`` seconds must be reported as
    :attr:`~tickwork.structures.RunStatus.TIMED_OUT` (and stopped, where the executor can).

    :param options: the keys of :attr:`section`; checked, and the others given their
        declared defaults, into :attr:`settings`
    """

    #: The :class:`~tickwork.config.Section` declaring the options of this executor's
    #: ``[executor.NAME]`` table (docs/plugins.md#options): the configuration is checked against
    #: it, the reference renders it, and the constructor's keyword arguments are its keys.
    section: ClassVar[type[Section]] = NoOptions
    #: Whether a run is handed to a queue outside the node (a task queue's broker): in flight, it
    #: holds no worker of this node, only a message until the broker confirms it, and it counts
    #: as ``1 / HANDOFFS_PER_RUN`` of a run against ``max_in_flight`` (docs/handoff.md#options).
    hands_off: ClassVar[bool] = False

    def __init__(self, **options: Any) -> None:
        #: The checked options (every declared key, defaults included).
        self.settings = type(self).section(**options)

    @abstractmethod
    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        """Check that ``target`` names something this executor can run.

        Called when a schedule is added or declared, so mistakes surface then and not at 3 am.

        :raises tickwork.errors.ExecutorError: if the target is invalid
        """

    def start(self) -> None:  # noqa: B027 - optional hook
        """Acquire resources (pools, clients). Called once before the first :meth:`submit`."""

    @abstractmethod
    def submit(self, call: JobCall, on_done: Callable[[Outcome], None]) -> None:
        """Start running ``call`` and return at once; call ``on_done`` when it ends.

        :param call: what to run
        :param on_done: callback taking the final outcome; must be called exactly once
        """

    def submit_fenced(self, call: JobCall, on_done: Callable[[Outcome], None], fence: BodyFence | None) -> None:
        """:meth:`submit`, for an executor that may hold a run before its body starts (a queue
        for a free worker): it asks ``fence`` as the body is about to start, not when the run was
        queued, and a :attr:`~tickwork.structures.StartVerdict.DROP` means the body must not
        start (report :data:`~tickwork.structures.NOT_STARTED`; ``WAIT``: ask again shortly).
        The engine submits through this. The default is :meth:`submit`: an executor that starts
        (or hands off) a run as it takes it is fenced by the engine's own check before it."""
        self.submit(call, on_done)

    @abstractmethod
    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        """Stop accepting calls; with ``wait``, wait up to ``timeout`` seconds for running ones."""

    def capacity(self) -> int | None:
        """How many more calls this executor can take without queueing; ``None`` if unbounded."""
        return None

    def cancel(self, run_id: int, reason: str) -> bool:
        """Stop the run ``run_id`` (a :class:`~tickwork.structures.JobCall` submitted earlier)
        and report it :attr:`~tickwork.structures.RunStatus.CANCELLED` with ``reason`` as its
        error, through its ``on_done`` (still exactly once). Called from the engine's thread for
        schedules with ``overlap = "cancel_other"`` when their next fire comes due.

        :return: True if the run was stopped and reported so; False if it cannot be stopped (it
            then ends as it would have) or has ended already. Default: False (nothing stoppable)
        """
        return False


#: Seconds a node counts as live after its last heartbeat when its membership plugin has no
#: ``node_ttl`` (the heartbeat plugins' default).
DEFAULT_NODE_TTL = 4.0
#: How many times its ``batch_size`` a node's claim may grow to while a backlog lasts and no fire
#: waits on the node for its time, as far as the store's ``claim_ceiling`` allows
#: (docs/claim-protocol.md#claim-size): 1,000 fires per claim with the default batch of 100.
CLAIM_GROWTH = 10
#: How many fires for an executor that :attr:`~Executor.hands_off` count as one run against a
#: node's ``max_in_flight``: a minute of hand-offs larger than it is claimed ahead and handed off
#: at once (docs/handoff.md#options), while the runs a node runs itself stay bounded by it.
HANDOFFS_PER_RUN = 10


class Membership(ABC):
    """Decides which schedules this node attempts, by owning hash buckets.

    Every schedule has a bucket (:func:`tickwork.structures.bucket_of`). The engine passes
    :meth:`owned_buckets` to the claim query, so the ownership filter runs in the database.
    """

    #: The :class:`~tickwork.config.Section` declaring the options of the ``[membership]``
    #: table besides ``plugin`` (as :attr:`Executor.section`).
    section: ClassVar[type[Section]] = NoOptions
    #: Seconds a node counts as live after its last heartbeat (the engine's stall check and
    #: ``tickwork nodes`` use it); a heartbeat membership sets its configured ``node_ttl``.
    node_ttl: float = DEFAULT_NODE_TTL
    #: Live nodes that attempt each schedule when the membership partitions (``hashring``);
    #: ``None`` when every node attempts every schedule.
    owners: int | None = None
    #: The live nodes as this membership last saw them; empty when it does not track them.
    live_nodes: Sequence[str] = ()

    def __init__(self, **options: Any) -> None:
        #: The checked options (every declared key, defaults included).
        self.settings = type(self).section(**options)

    @abstractmethod
    def start(self, store: Store, node_id: str) -> None:
        """Join the cluster (announce the node, start heartbeats). Called once at node start."""

    @abstractmethod
    def stop(self) -> None:
        """Leave the cluster (stop heartbeats, remove the node record if possible)."""

    @abstractmethod
    def owned_buckets(self) -> Sequence[int] | None:
        """Return the buckets this node attempts, or ``None`` for all of them."""

    def healthy(self) -> bool:
        """False when this node must not start new runs (e.g. it could not renew its heartbeat)."""
        return True

    def on_change(self, callback: Callable[[], None]) -> None:  # noqa: B027 - optional hook
        """Register ``callback`` to be called when the owned buckets change."""

    def rejoins(self) -> int:
        """How many times this node found that the others had declared it dead (its record
        removed, its claims released) and joined again. When it changes, the engine drops the
        fires it held, its pending retries and its unwritten ends: the others recorded them.
        Default: 0 (a membership without heartbeats is never declared dead)."""
        return 0

    def watch_loop(self, stalled: Callable[[], str | None]) -> None:  # noqa: B027 - optional hook
        """Register the engine's stall check: ``stalled()`` returns what the loop has been
        waiting on for too long, or ``None``. A heartbeat membership does not vouch for a node
        whose loop is stalled (it stops renewing the heartbeat), so the others take over."""

    def buckets_for(self, node_id: str, live: Sequence[str]) -> Sequence[int] | None:
        """Return the buckets ``node_id`` owns while ``live`` are the live nodes, or ``None`` for
        all of them. Called by readers (the admin API, the dashboard), never by the engine; the
        default says "all", which is right for memberships that do not partition."""
        return None


class Store(RunHistory, ClaimLedger, NodeRegistry, HealthRecords, TokenStore):
    """Persists schedules, claims and the run history.

    A store keeps the invariants of docs/claim-protocol.md: at most one first attempt per
    (schedule, scheduled-for) in the history; a claim only for a schedule whose next fire time is
    at or before the database clock; an end only under the claim's fence token.

    A store's constructor takes the keys of its :attr:`section` as keyword arguments (plus what
    the code that builds it passes, such as a test clock), and checks them with it.
    """

    #: Claim strategy names this store supports, the first being its default.
    claim_strategies: ClassVar[tuple[str, ...]] = ()
    #: The :class:`~tickwork.config.Section` declaring the options of the ``[store]`` table
    #: besides ``plugin`` (as :attr:`Executor.section`).
    section: ClassVar[type[Section]] = NoOptions
    #: Most schedules one :meth:`claim_due` call takes (the engine's claim batch). A store that
    #: takes it as an option sets it per instance; 100 otherwise.
    batch_size: int = 100

    @property
    def claim_ceiling(self) -> int:
        """Most schedules one :meth:`claim_due` call takes however many it is asked for. A node
        with a backlog and no fire waiting for its time asks for up to :data:`CLAIM_GROWTH`
        times :attr:`batch_size` (docs/claim-protocol.md#claim-size); a store that takes that
        many says so here. Default: :attr:`batch_size` (the node's claims never grow)."""
        return self.batch_size

    #: Statements this store has executed (benchmarks' statements per fire); a store that does
    #: not count them stays at 0.
    statements: int = 0

    def describe(self) -> str:
        """Name the database for messages and the start-up banner, never with a password.
        Default: the class name."""
        return f"{type(self).__name__} database"

    # -- lifecycle -------------------------------------------------------------------------------

    @abstractmethod
    def open(self, *, check_schema: bool = True) -> None:
        """Connect to the database.

        :raises tickwork.errors.StoreError: if the database cannot be reached or opened
        :raises tickwork.errors.SchemaOutdatedError: if ``check_schema`` and the schema is not at
            the latest migration; the message names the command that fixes it
        """

    @abstractmethod
    def close(self) -> None:
        """Release connections and background listeners."""

    @abstractmethod
    def upgrade(self) -> None:
        """Apply all pending schema migrations."""

    def schema_revisions(self) -> tuple[str | None, str]:
        """Return the database's schema revision (``None``: no schema yet) and the latest one
        this tickwork knows, without migrating (``tickwork db current``).

        :raises tickwork.errors.TickworkError: if this store has no versioned schema (the default)
        """
        raise TickworkError(f"the {type(self).__name__} store has no versioned schema")

    def upgrade_sql(self) -> str:
        """Return the statements :meth:`upgrade` would run, as text (``tickwork db upgrade --sql``).

        :raises tickwork.errors.TickworkError: if this store cannot tell (the default)
        """
        raise TickworkError(f"the {type(self).__name__} store cannot print its migrations as SQL")

    @abstractmethod
    def listen(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` (from any thread) whenever another process adds, changes, enables or
        triggers a schedule, so a sleeping engine can re-check at once. Called once per node."""


class RunningNode(Protocol):
    """What the lifecycle hooks see of the node that calls them (a :class:`tickwork.Node`)."""

    @property
    def node_id(self) -> str: ...

    @property
    def store(self) -> Store: ...

    @property
    def executors(self) -> Mapping[str, Executor]:
        """The node's executors by configured name (a plugin's maintenance duty finds its own)."""
        ...

    @property
    def in_flight(self) -> int:
        """Runs handed to executors that have not ended."""
        ...

    @property
    def held(self) -> int:
        """Fires claimed ahead of their time, waiting in memory to start."""
        ...

    def health(self) -> tuple[bool, str]:
        """(healthy, reason): the store answers and the node's heartbeat is fresh."""
        ...
