"""The roles a :class:`~tickwork.abc.Store` plays, one interface each: the schedule catalogue, the
claim ledger, the node registry and the run history (read by the admin API, written by
hand-offs). :class:`tickwork.abc.Store` is all of them plus its lifecycle; a store implements
the store, never a role alone. Split so that each interface stays readable on its own."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import ClassVar

from ..errors import NamespaceLimitError, ScheduleNotFoundError, StoreError, TickworkError
from ..structures import (
    DEFAULT_NAMESPACE,
    FAILING,
    Admission,
    Claim,
    Fault,
    Finish,
    NamespaceLimits,
    NodeRecord,
    Outcome,
    Pause,
    RunRecord,
    RunStatus,
    Schedule,
    ScheduleKey,
    SchedulePlan,
    ScheduleSpec,
    ScheduleState,
    ScheduleVersion,
    StartRound,
)

#: Most history rows :meth:`RunHistory.prune_history` deletes per call (each call one short transaction).
PRUNE_BATCH = 10_000


class StoreClock(ABC):
    """The database clock: what decides what is due."""

    @abstractmethod
    def now(self) -> datetime:
        """Return the database clock as an aware UTC datetime."""


class ScheduleCatalog(StoreClock):
    """Schedules: their definitions, enabling and pausing, plans written at once, backfills and
    admissions, and "run now"."""

    #: The limits of the namespaces that have them (``[namespaces.NAME]``; docs/teams.md#limits),
    #: set by whoever builds the store from a configuration. A write past ``max_schedules`` is
    #: refused with :class:`~tickwork.errors.NamespaceLimitError` in its own transaction.
    namespace_limits: Mapping[str, NamespaceLimits] = MappingProxyType({})

    @abstractmethod
    def add(self, spec: ScheduleSpec, next_fire: datetime | None, *, by: str | None = None) -> Schedule:
        """Create a schedule, at version 1: in the same transaction, record that version
        (:class:`~tickwork.structures.ScheduleVersion`: its definition and its changes from
        nothing, by :func:`tickwork.scheduling.versions.changes`) written ``by`` whom.

        :raises tickwork.errors.ScheduleExistsError: if the name is taken
        """

    @abstractmethod
    def update(
        self, spec: ScheduleSpec, next_fire: datetime | None, *, retime: bool = True, by: str | None = None
    ) -> Schedule:
        """Replace the definition of an existing schedule and (with ``retime``) set its next fire
        time; ``retime=False`` keeps the stored one (``next_fire`` is then ignored). When the
        definition (:func:`tickwork.scheduling.versions.definition`) changes, the schedule moves
        to its next version, recorded in the same transaction with its changes, ``by`` whom;
        ``enabled`` alone is state and makes none.

        A claim in flight is left alone, its claim and start state included: the run ends
        normally under its fence. A next fire set while a claim holds the schedule takes effect
        when the claim is released (its end, a takeover, a dead node's release), and a fire
        claimed ahead and not yet started is not started any more (docs/claim-protocol.md,
        "Writes while a run is in flight"). :meth:`set_enabled` and :meth:`resume_expired` set
        next fires the same way.

        :raises tickwork.errors.ScheduleNotFoundError: if no schedule has ``spec.name``
        """

    @abstractmethod
    def get(self, name: str, *, namespace: str = DEFAULT_NAMESPACE) -> Schedule:
        """:raises tickwork.errors.ScheduleNotFoundError: if no schedule has that name"""

    @abstractmethod
    def list_schedules(self, *, module: str | None = None, namespace: str | None = None) -> list[Schedule]:
        """Return all schedules (optionally only those declared by ``module``), ordered by name."""

    @abstractmethod
    def remove(self, name: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        """Delete a schedule and its history.

        :raises tickwork.errors.ScheduleNotFoundError: if no schedule has that name
        """

    @abstractmethod
    def set_enabled(
        self,
        name: str,
        enabled: bool,
        next_fire: datetime | None,
        pause: Pause | None = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Schedule:
        """Enable or disable a schedule; ``next_fire`` is stored with it. Enabling clears its
        pause and its count of failures; disabling with ``pause`` stores it (its ``at`` is the
        database clock now), without one keeps the pause it has.

        :raises tickwork.errors.ScheduleNotFoundError: if no schedule has that name
        """

    def resume_expired(self, next_fire: Callable[[ScheduleSpec, datetime], datetime | None]) -> list[Schedule]:
        """Enable the paused schedules whose pause ``until`` has passed (database clock), each
        first due at ``next_fire(spec, now)``; returns them as they were. Run by every node's
        housekeeping, so two nodes may race: a pause is resumed once.

        This default reads every schedule; a SQL store reads an index of the pauses' ends.
        """
        now = self.now()
        resumed: list[Schedule] = []
        for schedule in self.list_schedules():
            pause = schedule.pause
            if schedule.spec.enabled or pause is None or pause.until is None or pause.until > now:
                continue
            self.set_enabled(schedule.name, True, next_fire(schedule.spec, now), namespace=schedule.namespace)
            resumed.append(schedule)
        return resumed

    def write_schedules(
        self,
        plan: Callable[[Sequence[Schedule]], SchedulePlan],
        next_fire: Callable[[ScheduleSpec, datetime], datetime | None],
        *,
        by: str | None = None,
    ) -> SchedulePlan:
        """Write many schedules at once (deployment sync, ``Admin.add_many``); each created or
        changed definition is a version written ``by`` whom (as :meth:`add` and :meth:`update`).

        ``plan`` is called once with every stored schedule and returns what to write; it may
        raise to write nothing. ``next_fire(spec, now)`` gives the first fire of a created or
        retriggered schedule from ``now``, the database clock read when its batch is written, so
        a long write never leaves fire times in the past. Returns the plan that was applied.

        This default is correct but writes row by row and is atomic only per row; a SQL store
        overrides it with one transaction, batched statements and a lock that serializes two
        nodes writing at the same moment.

        :raises tickwork.errors.ScheduleExistsError: if a name to create was taken meanwhile
        """
        stored = self.list_schedules()
        applied = plan(stored)
        refuse_past_limits(self.namespace_limits, stored, applied)
        # Removes first: a plan that replaces schedules of a full namespace fits its limit.
        for namespace, name in applied.remove:
            try:
                self.remove(name, namespace=namespace)
            except ScheduleNotFoundError:
                continue  # removed by another node writing the same plan
        for spec in applied.create:
            self.add(spec, next_fire(spec, self.now()), by=by)
        for spec in applied.update:
            self.update(spec, None, retime=False, by=by)
        for spec in applied.retrigger:
            self.update(spec, next_fire(spec, self.now()), by=by)
        if applied.applied:
            self.mark_applied(applied.applied)
        return applied

    def mark_applied(self, keys: Sequence[ScheduleKey]) -> None:
        """Record each schedule of ``keys`` ((namespace, name)) as left by an apply at its current
        version (:attr:`~tickwork.structures.Schedule.applied_version`, ``tickwork apply``); keys
        not stored are skipped. :meth:`write_schedules` calls it for a plan's ``applied`` (a SQL
        store writes them in the plan's transaction).

        :raises NotImplementedError: a store that keeps no apply records (the default)
        """
        raise NotImplementedError(f"{type(self).__name__} keeps no record of applies (tickwork apply)")

    def versions(self, name: str, *, namespace: str = DEFAULT_NAMESPACE) -> list[ScheduleVersion]:
        """The versions of schedule ``name``'s definition, oldest first (``tickwork jobs
        versions``). A schedule stored before versions were recorded has none until it changes.

        :raises tickwork.errors.ScheduleNotFoundError: if no schedule has that name
        :raises NotImplementedError: a store that keeps no versions (the default)
        """
        raise NotImplementedError(f"{type(self).__name__} keeps no schedule versions")

    def next_pause_end(self) -> float | None:
        """Seconds from the database clock until the earliest end of a pause (``until``; zero or
        less: ended), ``None`` when no pause has an end: when a node's housekeeping looks next.

        This default reads every schedule; a SQL store reads the index of the pauses' ends.
        """
        now = self.now()
        ends = [
            s.pause.until
            for s in self.list_schedules()
            if not s.spec.enabled and s.pause is not None and s.pause.until is not None
        ]
        return None if not ends else (min(ends) - now).total_seconds()

    def queue_backfill(
        self,
        name: str,
        times: Sequence[datetime],
        *,
        rerun: bool = False,
        overlap: str = "buffer_all",
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[datetime]:
        """Queue fire times of schedule ``name`` to run once each (``tickwork jobs backfill``);
        returns those queued. A time the history holds a run of (not only a skipped one) is left
        out unless ``rerun``; a time queued already is queued once (with its first ``overlap``).
        ``overlap`` (:data:`~tickwork.structures.BACKFILL_OVERLAP`) is stored with each time and
        decides how :meth:`take_backfills` takes it.

        :raises tickwork.errors.ScheduleNotFoundError: if no schedule has that name
        :raises NotImplementedError: a store without backfill
        """
        raise NotImplementedError(f"{type(self).__name__} has no backfill")

    def take_backfills(
        self,
        node_id: str,
        *,
        limit: int,
        buckets: Sequence[int] | None,
        namespaces: Sequence[str] | None = None,
        ends: Sequence[Finish] = (),
    ) -> list[Claim]:
        """Take up to ``limit`` queued backfill times of schedules in ``buckets`` (``None``: all)
        and of the ``namespaces`` this node serves (``None``: all),
        earliest first, each removed from the queue and recorded as a ``running`` run of its fire
        (attempt 1, or the next one after a skipped fire or with ``rerun``). A time whose fire
        ran meanwhile is dropped. Per schedule, fire-time order is kept and each queued time's
        ``overlap`` is honoured against the schedule's ``running`` runs, decided by the store's
        state so that two nodes taking at once agree
        (:func:`~tickwork.structures.backfill_takeable`): a ``buffer_all`` time is taken only
        when none is running, and alone; an ``allow`` time while fewer than the schedule's
        ``max_concurrent`` run. The claims carry their run ids; their ends are written with
        :meth:`end_attempt`, or carried by the next take: ``ends`` (ends of backfilled runs)
        are written first in the take's own transaction, each as :meth:`end_attempt` writes it
        (a run no longer ``running`` is left as it is), so that the slots they free are taken in
        the same round trip (``limit`` 0: only the ends are written). Default: nothing (a store
        without backfill, which never has a backfilled run to end)."""
        if ends:
            raise NotImplementedError(f"{type(self).__name__} has no backfill")
        return []

    def retry_backfill(self, claim: Claim, outcome: Outcome) -> bool:
        """End the failed backfilled run ``claim.run_id`` with ``outcome`` and, in the same
        transaction, queue its fire time again (``rerun``, with ``claim.backfill_overlap``; a time
        queued meanwhile keeps its row): :meth:`take_backfills` takes the retry like any queued
        time, as the next attempt, under the backfill's overlap and in fire-time order, on any
        node owning the schedule.

        :return: whether it did; ``False``: the run was no longer ``running`` (recorded abandoned
            meanwhile), nothing written
        """
        raise NotImplementedError(f"{type(self).__name__} has no backfill")

    def admit(self, node_id: str, admission: Admission) -> str | None:
        """Let a claimed fire of a schedule with a concurrency bound (``overlap = "allow"``, a
        ``concurrency_key``) start, or say why not, in one transaction by the database's state
        (docs/claim-protocol.md#concurrent-runs). While the claim is still held: count the
        schedule's other ``running`` runs and, under a lock on the key's row, the other running
        runs admitted under its key; if :meth:`Admission.refusal` finds none of the bounds
        reached, mark the run admitted under the key, and with ``admission.release`` release
        the schedule (idle, ``next_fire``, the skipped fires recorded) while the run goes on.

        :return: ``None``: admitted (and released, with ``release``); otherwise the reason it
            may not start (the claim still held: end it as ``skipped`` with that reason), or
            :data:`~tickwork.structures.ADMISSION_FENCED` when the claim is no longer held
        :raises NotImplementedError: a store without concurrent runs (the default)
        """
        raise NotImplementedError(f"{type(self).__name__} has no concurrency limits (overlap allow, concurrency keys)")

    def end_detached(self, node_id: str, finishes: Sequence[Finish]) -> list[bool]:
        """Write the ends of runs whose schedule was released when they started
        (:meth:`admit` with ``release``): each run row only, fenced by its id, ``node_id`` and
        status ``running`` (a run a dead-node release abandoned meanwhile keeps that status and
        gains a note). Schedules with ``pause_after_failures`` or ``max_runs`` count the end as
        :meth:`finish` does. Returns, per finish, whether its end landed.

        :raises NotImplementedError: a store without concurrent runs (the default)
        """
        raise NotImplementedError(f"{type(self).__name__} has no concurrency limits (overlap allow, concurrency keys)")

    @abstractmethod
    def fire_now(self, name: str, *, namespace: str = DEFAULT_NAMESPACE) -> Schedule:
        """Make a schedule due at the database's current time (a "run now").

        :raises tickwork.errors.ScheduleNotFoundError: if no schedule has that name
        """


#: What a claim tells the next due time it read to (:meth:`ClaimLedger.claim_due`'s ``next_due``).
NextDueSink = Callable[[datetime | None], None]


class ClaimLedger(ABC):
    """Claims and their ends: due fires claimed under a fence, started, ended, given back,
    renewed, released and reaped (docs/claim-protocol.md)."""

    #: Whether :meth:`claim_due` takes ``next_due`` (a store written before it existed does not:
    #: the engine passes it only where this is true).
    claim_reads_next_due: ClassVar[bool] = False

    @abstractmethod
    def claim_due(
        self,
        node_id: str,
        *,
        limit: int,
        buckets: Sequence[int] | None,
        ahead: float = 0.0,
        steal_after: float | None = None,
        namespaces: Sequence[str] | None = None,
        next_due: NextDueSink | None = None,
    ) -> list[Claim]:
        """Claim up to ``limit`` enabled, idle schedules whose next fire time is due, earliest
        first.

        Creates the history row (status ``running``) of every claimed fire in the same
        transaction, with the claim time as its start, or no start for a fire claimed ahead of
        its time. Uses the configured claim strategy.

        :param buckets: restrict to these hash buckets; ``None`` for all
        :param ahead: also claim schedules due within this many seconds of the database clock
            (their :attr:`~tickwork.structures.Claim.early` is true; the caller starts them on
            time or gives them back with :meth:`unclaim`)
        :param steal_after: with ``buckets``, also claim schedules of any bucket whose fire is
            overdue by more than this many seconds of the database clock (their owners are
            behind); ``None``: only ``buckets``. Ignored without ``buckets``.
        :param next_due: only where :attr:`claim_reads_next_due`: a claim that took fires but
            fewer than ``limit`` (it drained what was due) may call it, once, with what
            :meth:`next_due` with the same ``buckets``, ``steal_after`` and ``namespaces`` would
            answer right after this claim, read in the claim's own transaction after its writes
            (the caller then needs no read of its own). A store that cannot read it there for
            free does not call it, and the caller reads :meth:`next_due` as before.
        :raises tickwork.errors.StoreError: on a database error (nothing is claimed then)
        """

    @abstractmethod
    def finish(self, node_id: str, finishes: Sequence[Finish]) -> list[bool | None]:
        """End claimed runs: write their outcomes and release the schedules with new fire times.

        Each end is fenced: it releases the schedule only if it is still claimed with the same
        ``claim_seq``. A fenced-out end updates nothing but its own history row, which records
        that the claim had been taken over. A run's end time is ``Finish.finished_at`` when
        set, else the database clock at the write.

        :return: for each finish, whether it landed; ``None`` where it was not written because
            another database session holds its schedule's row locked (the caller writes it
            again later: waiting for the lock would stall the node)
        """

    @abstractmethod
    def unclaim(self, node_id: str, claims: Sequence[Claim]) -> int:
        """Give back claims taken ahead of their time that never started (a node stopping):
        each schedule becomes idle again, still due at the claimed fire time, and the run row
        the claim created is deleted, as if the claim had never happened. Fenced like
        :meth:`finish`.

        :return: how many were given back
        """

    def start_held(self, node_id: str, claims: Sequence[Claim], grace: float, lead: float = 0.0) -> list[bool]:
        """Record that fires claimed ahead of their time (:attr:`Claim.early`) start: the
        fenced start. A fire may start only while its claim is still ``node_id``'s (same
        ``claim_seq``), not started yet, due within ``lead`` seconds by the database clock and
        no later than its ``scheduled_for`` plus ``grace`` seconds; all of it judged in the
        statement that records the start, one statement for the whole batch. The start is
        recorded as of the later of now and the fire's time (a start recorded ahead, within
        ``lead``, is one the node makes at the fire's time: the engine never runs a fire
        early). A fire whose start is refused must not run: it was taken over
        (:meth:`take_over_unstarted`, a dead-node release) or its deadline passed and it is
        about to be.

        Default: every start granted (a store without fenced starts: a fire claimed ahead stays
        with its holder until the holder is declared dead).

        :return: for each claim, whether it may start
        :raises tickwork.errors.StoreError: on a database error (nothing is started then)
        """
        return [True] * len(claims)

    def take_over_unstarted(self, grace: float) -> int:
        """Give back every fire claimed ahead of its time that did not start by its
        ``scheduled_for`` plus ``grace`` seconds (database clock), whoever holds it: the
        schedule becomes idle, still due at that fire time, and the unstarted run row is deleted,
        so that any owner claims the fire again and runs it, late, exactly once (the holder's
        :meth:`start_held` is refused from then on). Called by every node every
        ``takeover_interval``; rows another session holds locked are left for the next call.

        Default: nothing (see :meth:`start_held`).

        :return: how many fires were given back
        """
        return 0

    def start_round(
        self,
        node_id: str,
        claims: Sequence[Claim],
        grace: float,
        lead: float = 0.0,
        *,
        take_over: bool = False,
        finishes: Sequence[Finish] = (),
    ) -> StartRound:
        """The fenced start of ``claims`` (:meth:`start_held`) with what rides on its round trip:
        with ``take_over``, the takeover (:meth:`take_over_unstarted` with ``grace``), and the
        ends ``finishes`` (:meth:`finish`). Each part is decided exactly as its own method
        decides it, by the database's state and clock when it runs, and they touch disjoint rows:
        a start takes only this node's unstarted claims before their deadline, the takeover only
        unstarted claims past it, an end only claims that started. A store that can sends all
        three as one statement in one transaction (PostgreSQL): the starts are then recorded
        only if the takeover and the ends are too, and a database error leaves nothing written.

        Default: the three methods in turn (the starts first). A database error of the starts
        is raised (nothing started); one of the takeover or the ends after the starts were
        recorded is returned in :attr:`StartRound.error`, with what it stopped marked not done,
        so that the granted fires still run (their starts stand) and the caller writes the rest
        again.

        :raises tickwork.errors.StoreError: on a database error before any start was recorded
        """
        granted = tuple(self.start_held(node_id, claims, grace, lead)) if claims else ()
        taken: int | None = None
        ended: tuple[bool | None, ...] | None = None
        try:
            if take_over:
                taken = self.take_over_unstarted(grace)
            ended = tuple(self.finish(node_id, finishes)) if finishes else ()
        except StoreError as exc:
            return StartRound(granted, taken, ended, exc)
        return StartRound(granted, taken, ended)

    @abstractmethod
    def end_attempt(self, claim: Claim, outcome: Outcome, started_at: datetime | None = None) -> None:
        """Record how one attempt ended without releasing the schedule (a retry follows).

        :param started_at: when the attempt started, as for :attr:`Finish.started_at`
        """

    @abstractmethod
    def start_attempt(self, node_id: str, claim: Claim) -> int | None:
        """Open the history row of retry ``claim.attempt`` under the claim's fence. Idempotent:
        called again for the same claim and attempt (an answer lost), it returns the same row.

        :return: the run id, or ``None`` if the claim was taken over (do not run it)
        """

    def start_rerun(self, node_id: str, claim: Claim, *, grace: float, max_attempt: int) -> Claim | None:
        """Run again a fire abandoned with its node (``on_abandon = "rerun"``): ``claim`` holds
        the fire (its run id ``None``: the history has it already). Under the claim's fence
        (this node holds it, same ``claim_seq``), if the fire's latest attempt is ``abandoned``,
        open a ``running`` row for the next attempt, started by the database clock, unless
        :func:`~tickwork.structures.rerun_refusal` refuses it (that attempt is ``max_attempt``
        or more; the fire is more than ``grace`` seconds old by the database clock): then append
        the refusal to the abandoned row's error. The history's uniqueness on (schedule, fire
        time, attempt) is the last fence. Idempotent: asked again under the same claim after an
        answer was lost, it returns the same attempt.

        Default: ``None`` (a store without reruns skips abandoned fires, as ``on_abandon = "skip"``).

        :return: ``claim`` as that attempt, with its run id; ``None``: not rerun (nothing
            abandoned, refused, or the claim was taken over)
        """
        return None

    @abstractmethod
    def next_due(
        self,
        *,
        buckets: Sequence[int] | None,
        steal_after: float | None = None,
        namespaces: Sequence[str] | None = None,
    ) -> datetime | None:
        """Return the earliest next fire time of an enabled, idle schedule in ``buckets``.

        :param steal_after: with ``buckets``, a schedule of any other bucket that is due by the
            database clock and still idle (its owners are behind) counts too, from the moment
            :meth:`claim_due` with the same ``steal_after`` may take it (its next fire plus this
            many seconds); ``None``: only ``buckets``. Ignored without ``buckets``.
        """

    @abstractmethod
    def renew(self, node_id: str, claims: Sequence[Claim]) -> None:
        """Keep the given claims alive (a run in progress) by refreshing their claim time.

        A claim whose row another database session holds locked is renewed at the next call,
        not waited for (a SQL store skips locked rows): the node calls this between its passes.
        """

    @abstractmethod
    def release_node(self, node_id: str, reason: str) -> int:
        """Release every claim ``node_id`` holds and mark its running runs ``abandoned``.

        Used at start-up (claims the node left behind) and when a node is known dead. A SQL
        store passes over a schedule row another database session holds locked (not waited for):
        it stays held, to be released by a later call (the engine's reconcile does for its own).

        :return: the number of schedules released
        """

    @abstractmethod
    def park(self, node_id: str, parks: Sequence[tuple[Finish, Fault]]) -> list[bool | None]:
        """End claimed runs whose schedules cannot be handled (an unknown trigger kind or time
        zone, an executor missing on this node, arithmetic that fails) and park the schedules.

        Each park is fenced like :meth:`finish`. Where it lands, the schedule becomes idle with
        no next fire time (so no node claims it again), its ``fault`` holds the fault's text
        (shown by ``tickwork jobs list``) and ``fault_kind`` its kind; the run, if the claim has
        one, gets the finish's outcome. :meth:`update` and :meth:`set_enabled` clear both.

        :param parks: each end with the fault (one-line text, kind) that parks its schedule
        :return: for each park, whether it landed; ``None``: passed over because another
            transaction holds its schedule's row locked (not waited for), to be asked again
        :raises tickwork.errors.StoreError: on a database error (nothing is parked then)
        """

    @abstractmethod
    def release_untracked(self, node_id: str, tracked: Sequence[Claim], reason: str) -> int:
        """Release every claim ``node_id`` holds except ``tracked`` (matched on schedule and
        fence token), recording their running runs ``abandoned`` with ``reason``: the engine's
        reconcile, for claims whose answer was lost or whose handling was dropped.

        :param tracked: the claims the caller still handles (in flight, held, retrying, ending)
        :return: the number of schedules released
        :raises tickwork.errors.StoreError: on a database error (nothing is released then)
        """

    @abstractmethod
    def reap_expired(self, grace_seconds: float) -> int:
        """Hard timeout: release claims older than their schedule's timeout plus ``grace_seconds``
        (by the database clock), marking their runs ``timed_out``.

        :return: the number of schedules released
        """


class NodeRegistry(ABC):
    """The nodes of the cluster: registration, heartbeats, presence and the release of dead ones."""

    @abstractmethod
    def heartbeat(self, node_id: str) -> datetime:
        """Create or refresh the node record; return the database time of the heartbeat."""

    def refresh_heartbeat(self, node_id: str) -> datetime | None:
        """Refresh the node record only if it still exists; ``None`` when it is gone: the other
        nodes declared this node dead (and released its claims), so it must drop what it holds
        and register again. Default: read the records, then :meth:`heartbeat`.

        :raises tickwork.errors.StoreError: on a database error
        """
        if all(node.id != node_id for node in self.nodes()):
            return None
        return self.heartbeat(node_id)

    @abstractmethod
    def register_node(self, node_id: str, instance: str, live_within: float) -> NodeRecord | None:
        """Create this process's node record, unless another live process already uses the id.

        :param instance: a random token of this process
        :param live_within: a record of another instance whose heartbeat is younger than this many
            seconds (database clock) is live
        :return: ``None`` when the record is now this process's; the live record otherwise
            (nothing is changed then)
        :raises tickwork.errors.StoreError: on a database error
        """

    def announce_executors(self, node_id: str, executors: Sequence[str]) -> None:  # noqa: B027
        """Publish the executor names ``node_id`` has configured in its record, where
        :meth:`nodes` returns them (``NodeRecord.executors``): the admin API checks a new
        schedule's executor against the live nodes with them. A node calls it right after
        :meth:`register_node`. The store keeps the names for the rest of the process, so the
        record :meth:`heartbeat` creates again after the others declared the node dead carries
        them too.

        Default: nothing is kept, and the node's record reads ``executors=None``, as one of an
        older tickwork does (the admin API then checks against its local configuration only).

        :raises tickwork.errors.StoreError: on a database error
        """

    @abstractmethod
    def release_dead_node(self, node_id: str, stale_after: float, reason: str) -> int | None:
        """Like :meth:`release_node`, only if ``node_id`` has not heartbeaten for ``stale_after``
        seconds (database clock), judged in the same transaction as the release; its node record
        is removed with it, unless a SQL store passed over a schedule row of it that another
        database session holds locked: then the record stays, and the next call, at the next
        beat, releases the rest.

        :return: the number of schedules released, or ``None`` if the node is alive
        :raises tickwork.errors.StoreError: on a database error (nothing is released then)
        """

    def hold_presence(self, node_id: str) -> float | None:
        """Hold ``node_id``'s presence: a lock the database keeps only while this process's
        session with it lives, so that the others can tell at once that a killed node is gone
        (:meth:`release_absent_node`). The heartbeat calls it at every beat, so it must return
        at once: checking the session and taking the lock again on a new one when the old one
        ended happen off the caller's thread (a slow reconnect must never delay a heartbeat).

        :return: seconds the presence has been held without a break (0 when just taken), or
            ``None`` when it is not held: the database has no such locks, or cannot be reached.
            Never raises. Default: ``None`` (the others judge this node by its heartbeat alone).
        """
        return None

    def release_absent_node(self, node_id: str, stale_after: float, reason: str) -> int | None:
        """Like :meth:`release_dead_node`, for a node whose presence no session holds any more
        while this node's own is held (so the database did not restart meanwhile), and whose
        heartbeat is older than ``stale_after`` seconds; all judged in the releasing
        transaction.

        :return: the number of schedules released, or ``None`` if the node may be alive (or the
            store cannot tell). Default: ``None``.
        :raises tickwork.errors.StoreError: on a database error (nothing is released then)
        """
        return None

    @abstractmethod
    def nodes(self) -> list[NodeRecord]:
        """Return every known node record."""

    @abstractmethod
    def remove_node(self, node_id: str) -> None:
        """Delete a node record (a graceful leave or a node found dead)."""


class RunHistory(ScheduleCatalog):
    """The run history: reads (the CLI, the admin API, the dashboard), pruning, and the reports of
    fires handed to another system's queue."""

    @abstractmethod
    def history(self, *, limit: int = 50, schedule: str | None = None, namespace: str | None = None) -> list[RunRecord]:
        """Return the most recent runs first (of the schedules of ``namespace``; ``None``: all)."""

    def prune_history(self, older_than: timedelta, *, limit: int = PRUNE_BATCH) -> int:
        """Delete at most ``limit`` runs that ended more than ``older_than`` ago (by the store's
        clock), in one short transaction; never a running one. A caller pruning a large history
        calls again while the answer is ``limit`` (the engine does, on its own thread), so no
        single statement holds locks for long.

        :return: how many rows were deleted. Default: 0 (a store that cannot prune keeps its
            history)
        """
        return 0

    def schedule_counts(self) -> dict[str, int]:
        """How many schedules are ``idle``, ``running`` and ``disabled`` (the metrics plugin's
        ``tickwork_schedules{state}``). Default: counted from :meth:`list_schedules`; a SQL
        store answers with one grouped query."""
        counts = {"idle": 0, "running": 0, "disabled": 0}
        for schedule in self.list_schedules():
            counts["disabled" if not schedule.spec.enabled else schedule.state.value] += 1
        return counts

    # -- read queries of the admin API (tickwork.admin) -----------------------------------------
    #
    # Not abstract, so a third-party store written before them keeps working: each default is
    # correct but reads every row into Python. A store holding many schedules or runs overrides
    # them with queries (the SQL store does).

    def database_exists(self) -> bool:
        """Tell, without creating anything, whether the database already exists.

        Read-only commands check it first so that they never create an empty database (a SQLite
        file, say) in the wrong place. Stores that cannot tell return ``True``.
        """
        return True

    def find_schedules(
        self,
        *,
        state: ScheduleState | None = None,
        enabled: bool | None = None,
        search: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        failing: bool | None = None,
        parked: bool | None = None,
        namespace: str | None = None,
    ) -> list[Schedule]:
        """Return schedules ordered by next fire time (those without one last), then name.

        :param search: keep schedules whose name or target contains this text (any case)
        :param limit: at most this many (``None``: all); ``offset`` skips the first ones
        :param failing: keep those whose last recorded run failed or timed out (``True``), or
            the others (``False``)
        :param parked: keep those a node parked (``fault`` set: ``True``), or the others
            (``False``). The admin API passes it only when it is given, so a store written
            before it keeps working without it.
        """
        found = [s for s in self.list_schedules(namespace=namespace) if _schedule_matches(s, state, enabled, search)]
        if parked is not None:
            found = [s for s in found if (s.fault is not None) is parked]
        if failing is not None:
            last = self.last_runs([s.id for s in found])
            found = [s for s in found if (s.id in last and last[s.id].status in FAILING) is failing]
        found.sort(key=lambda s: (s.next_fire is None, s.next_fire or datetime.min, s.name))
        return found[offset:] if limit is None else found[offset : offset + limit]

    def count_schedules(
        self,
        *,
        state: ScheduleState | None = None,
        enabled: bool | None = None,
        search: str | None = None,
        failing: bool | None = None,
        parked: bool | None = None,
        namespace: str | None = None,
    ) -> int:
        """How many schedules :meth:`find_schedules` would return without a limit."""
        return len(
            self.find_schedules(
                state=state, enabled=enabled, search=search, failing=failing, parked=parked, namespace=namespace
            )
        )

    def last_runs(self, schedule_ids: Sequence[int]) -> dict[int, RunRecord]:
        """The last run of each of these schedules that has one, by schedule id: the latest
        attempt of its latest fire time (a backfilled or rerun older fire, recorded later, is not
        the last run)."""
        wanted = set(schedule_ids)
        keys = {s.id: s.key for s in self.list_schedules() if s.id in wanted}
        out: dict[int, RunRecord] = {}
        for schedule_id, (namespace, name) in keys.items():
            records = self.find_runs(schedule=name, namespace=namespace, limit=1)
            if records:
                out[schedule_id] = records[0]
        return out

    def find_runs(
        self,
        *,
        schedule: str | None = None,
        status: Sequence[RunStatus] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        node: str | None = None,
        limit: int = 100,
        namespace: str | None = None,
    ) -> list[RunRecord]:
        """Return runs, latest scheduled time first (then latest attempt).

        :param status: keep runs with one of these statuses
        :param since: keep runs scheduled at or after this instant; ``until``: strictly before it
        """
        records = [
            r
            for r in self.history(limit=2**62, schedule=schedule, namespace=namespace)
            if (not status or r.status in status)
            and (since is None or r.scheduled_for >= since)
            and (until is None or r.scheduled_for < until)
            and (node is None or r.node == node)
        ]
        records.sort(key=lambda r: (r.scheduled_for, r.attempt, r.id), reverse=True)
        return records[:limit]

    def recent_runs(
        self, schedules: Sequence[Schedule], *, limit: int, status: Sequence[RunStatus] | None = None
    ) -> dict[int, list[RunRecord]]:
        """The latest ``limit`` runs of each of these schedules (latest scheduled time first, then
        latest attempt), by schedule id; with ``status``, only runs with one of these statuses.
        Schedule health (:mod:`tickwork.admin.health`) reads it for the page of schedules shown."""
        return {
            s.id: self.find_runs(schedule=s.name, namespace=s.namespace, status=status, limit=limit) for s in schedules
        }

    # -- hand-offs to another system's queue (Celery, RQ, Dramatiq executors) ---------------------
    #
    # Optional: a store without them cannot back a hand-off executor (the default raises).

    def report_handoff(
        self,
        run_id: int,
        status: RunStatus,
        *,
        expect: Collection[RunStatus],
        error: str | None = None,
        worker: str | None = None,
    ) -> tuple[bool, RunStatus | None]:
        """Record what a queue worker did with a handed-off run, fenced by the run's status: the
        run ``run_id`` moves to ``status`` only while its status is one of ``expect``, in one
        transaction. ``started`` stamps ``started_at`` (and clears ``finished_at``); any other
        status stamps ``finished_at``; both by the database clock. ``error`` replaces the run's
        error text (capped like every error). ``worker``, when given, becomes the run's
        :attr:`~tickwork.structures.RunRecord.worker` (capped by
        :func:`~tickwork.structures.cap_worker`) in the same fenced write: a report that does not
        land leaves it as it was; ``None`` leaves it as it was too.

        :return: whether it landed, and the run's status after the call (``None`` when no run
            has that id)
        :raises tickwork.errors.TickworkError: if this store cannot record hand-offs (the default)
        """
        raise TickworkError(f"the {type(self).__name__} store cannot record hand-offs")

    def pending_handoffs(self, keys: Collection[ScheduleKey], report_timeout: float) -> dict[ScheduleKey, RunRecord]:
        """The latest run handed off and not final (``submitted`` or ``started``) of each of the
        schedules ``keys`` ((namespace, name)) that has one, by key (a schedule without one, or
        unknown, is absent). First, in the same transaction, a pending hand-off older than
        ``report_timeout`` seconds (database clock, since its hand-off or its start) ends
        ``timed_out``: a message that never reports back blocks its schedule only that long. The
        hand-off executors ask it once per batch of fires, not once per fire.

        :raises tickwork.errors.TickworkError: if this store cannot record hand-offs (the default)
        """
        raise TickworkError(f"the {type(self).__name__} store cannot record hand-offs")

    def mark_stuck_handoffs(self, executor: str, pickup_timeout: float, note: str, limit: int = 100) -> list[RunRecord]:
        """Mark the hand-offs of ``executor``'s schedules that no worker reported started within
        ``pickup_timeout`` seconds of their hand-off (database clock): a ``submitted`` run whose
        error is empty gets ``note`` (which starts with
        :data:`~tickwork.structures.HANDOFF_STUCK`) as its error and keeps its status. Each run
        is marked once, fenced by its status and empty error, whatever the number of nodes
        asking: the runs returned (at most ``limit``, as marked) are the ones this call marked.

        :raises tickwork.errors.TickworkError: if this store cannot record hand-offs (the default)
        """
        raise TickworkError(f"the {type(self).__name__} store cannot record hand-offs")

    def release_handoffs(self, schedule: str, reason: str, *, namespace: str = DEFAULT_NAMESPACE) -> list[RunRecord]:
        """End every ``submitted`` run of ``schedule`` as ``cancelled`` with ``reason`` as its
        error (who released it and why), fenced by the status: a run a worker started meanwhile
        is left alone, and a worker taking a released run's message later finds it ended and does
        not run it. Returns the runs released, as released.

        :raises tickwork.ScheduleNotFoundError: if there is no such schedule
        :raises tickwork.errors.TickworkError: if this store cannot record hand-offs (the default)
        """
        raise TickworkError(f"the {type(self).__name__} store cannot record hand-offs")

    def get_run(self, run_id: int) -> RunRecord | None:
        """The history row ``run_id``, or ``None`` if there is none (``tickwork history --show``).
        This default reads the whole history: a store with an index on run ids overrides it
        (the SQL stores do)."""
        return next((r for r in self.history(limit=2**62) if r.id == run_id), None)


def _schedule_matches(
    schedule: Schedule, state: ScheduleState | None, enabled: bool | None, search: str | None
) -> bool:
    spec = schedule.spec
    if state is not None and schedule.state is not state:
        return False
    if enabled is not None and spec.enabled is not enabled:
        return False
    return not search or search.lower() in spec.name.lower() or search.lower() in spec.target.lower()


def namespace_growth(stored: Sequence[Schedule], plan: SchedulePlan) -> dict[str, int]:
    """How many schedules ``plan`` adds to each namespace, less those it removes from it."""
    out: dict[str, int] = {}
    for spec in plan.create:
        out[spec.namespace] = out.get(spec.namespace, 0) + 1
    for namespace, _name in plan.remove:
        out[namespace] = out.get(namespace, 0) - 1
    return out


def refuse_past_limits(limits: Mapping[str, NamespaceLimits], stored: Sequence[Schedule], plan: SchedulePlan) -> None:
    """Refuse ``plan`` when it puts more schedules in a namespace than its ``max_schedules``
    (counted from ``stored``; the SQL store counts in the write's transaction instead).

    :raises tickwork.errors.NamespaceLimitError: naming the namespace and its limit
    """
    for namespace, adding in sorted(namespace_growth(stored, plan).items()):
        limit = limits.get(namespace, NamespaceLimits()).max_schedules
        if limit is None or adding <= 0:
            continue
        held = sum(1 for s in stored if s.namespace == namespace)
        if held + adding > limit:
            raise NamespaceLimitError(namespace, limit, held, adding)
