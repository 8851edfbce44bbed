"""The public admin API: what ``tickwork jobs/history/nodes`` do, for Python code.

::

    import tickwork

    with tickwork.connect() as admin:            # same config discovery as the CLI
        admin.add("backup", "0 2 * * *", "myapp.tasks:backup", tz="Europe/Oslo")
        for info in admin.list(state="running"):
            print(info.name, info.running_on)

Read-only operations (``get``, ``list``, ``count``, ``history``, ``nodes``) never create a store:
a SQLite file that does not exist is an error naming the path and the config file. Writes go
through :mod:`tickwork.schedules`, the same functions the node uses. See docs/admin-api.md.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any

from ..abc import Store
from ..config.files import Config, load, parse
from ..errors import ConfigError, DatabaseMissingError, ScheduleNotFoundError
from ..plugin.assembly import build_membership, build_store
from ..plugin.manager import PluginManager, plugin_manager_for
from ..scheduling.firetimes import FireTimes, fire_times
from ..scheduling.validation import SpecBuilder
from ..structures import ALL_NAMESPACES, DEFAULT_NAMESPACE, RunRecord, RunStatus, ScheduleState, check_namespace, utc
from .applying import Applying
from .backfill import Backfills
from .health import Health, HealthPolicy, health_of
from .healthreads import HealthReads
from .info import NodeInfo, ScheduleInfo
from .liveexecutors import LiveExecutors
from .tokens import Tokens
from .versions import Versions
from .writes import ScheduleWrites

ConfigSource = str | os.PathLike[str] | Mapping[str, Any] | Config | None


def load_config(source: ConfigSource = None) -> Config:
    """A :class:`Config` from a path (``None``: ``$TICKWORK_CONFIG``, then ``./tickwork.toml``,
    then the defaults), a dict shaped like the TOML file, or a :class:`Config` as it is."""
    if isinstance(source, Config):
        return source
    if isinstance(source, Mapping):
        return parse(dict(source))
    return load(source)


def _as_utc(name: str, value: datetime | timedelta | None, now: Callable[[], datetime]) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, timedelta):
        return now() - value
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name}: must be a timezone-aware datetime, got {value!r}")
    return utc(value)


def _enum_list(cls: type[RunStatus], value: str | RunStatus | Iterable[str | RunStatus] | None) -> list[RunStatus]:
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    return [cls(item) for item in items]


class Admin(ScheduleWrites, Versions, HealthReads, Backfills, Applying, Tokens):
    """Schedules, history and nodes of one configuration's store; use :func:`connect`.

    The store is opened on first use and closed by :meth:`close` (or leaving the ``with`` block).
    Not thread-safe: give each thread its own ``Admin``.
    """

    def __init__(
        self,
        config: Config,
        *,
        manager: PluginManager | None = None,
        store: Store | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> None:
        #: The namespace schedules are named in and listings read (docs/teams.md); ``*``: every
        #: namespace, for reads (a name is then ambiguous: writes and lookups by name refuse it).
        self.namespace = DEFAULT_NAMESPACE
        self.use_namespace(namespace)
        self.config = config
        self.manager = manager or plugin_manager_for(config)
        self._store = store or build_store(config, self.manager)
        self._opened = False
        #: The thresholds of the health states :meth:`get`, :meth:`list` and :meth:`check` use
        #: (``[health]`` of the configuration).
        self.health_policy = HealthPolicy.of(config)
        #: Builds and validates specs against this configuration's triggers and executors.
        self.specs = SpecBuilder(config, self.manager)

    def use_namespace(self, namespace: str) -> None:
        """Act in ``namespace`` from now on (``*``: read every namespace).

        :raises tickwork.ConfigError: for a name that is no namespace's
        """
        if namespace != ALL_NAMESPACES:
            try:
                check_namespace(namespace)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        self.namespace = namespace

    # -- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> Admin:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._store.close()
        self._opened = False

    def store(self, *, write: bool = False) -> Store:
        """The open store. A read (``write=False``) refuses a database that does not exist yet."""
        if not self._opened:
            if not write and not self._store.database_exists():
                raise DatabaseMissingError(missing_message(self.config, self._store))
            self._store.open()
            self._opened = True
        return self._store

    # -- reading --------------------------------------------------------------------------------

    def get(self, name: str) -> ScheduleInfo:
        """:raises tickwork.ScheduleNotFoundError: if there is no such schedule"""
        store = self.store()
        try:
            schedule = store.get(name, namespace=self.named_in())
        except ScheduleNotFoundError:
            raise ScheduleNotFoundError(name, known=self.names()) from None
        health = health_of(store, [schedule], self.health_policy)
        return ScheduleInfo.of(schedule, store.last_runs([schedule.id]).get(schedule.id), health[schedule.id])

    def names(self) -> builtins.list[str]:
        """Every schedule's name (for "did you mean" when a name is not found)."""
        found = self.store().find_schedules(state=None, enabled=None, search=None, namespace=self.read_in())
        return [s.name for s in found]

    def list(
        self,
        *,
        state: str | ScheduleState | None = None,
        enabled: bool | None = None,
        search: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        failing: bool | None = None,
        health: str | Health | None = None,
        parked: bool | None = None,
    ) -> builtins.list[ScheduleInfo]:
        """Schedules ordered by next fire time (disabled and finished ones last), then name.

        :param state: ``idle`` or ``running``
        :param enabled: only enabled (``True``) or disabled (``False``) ones
        :param search: only those whose name or target contains this text, in any case
        :param limit: at most this many; ``offset`` skips the first ones (pagination)
        :param failing: only those whose last run failed or timed out (``True``), or the others
        :param parked: only those a node parked (``fault`` set: ``True``), or the others; a stored
            column, so counting them reads no history (the health state ``parked`` is the same set)
        :param health: only those in this health state (``failing``, ``overdue``, ...). Health is
            not stored: this computes the health of every schedule the other filters keep, then
            pages; without it only the page returned is assessed
        """
        if health is not None:
            chosen = self._by_health(
                Health(health), None if state is None else ScheduleState(state), enabled, search, failing, parked
            )
            return chosen[offset : None if limit is None else offset + limit]
        if limit is not None and limit < 0:
            raise ValueError(f"limit: must be >= 0, got {limit}")
        if offset < 0:
            raise ValueError(f"offset: must be >= 0, got {offset}")
        store = self.store()
        found = store.find_schedules(
            state=None if state is None else ScheduleState(state),
            enabled=enabled,
            search=search,
            limit=limit,
            offset=offset,
            namespace=self.read_in(),
            **_given_filters(failing, parked),
        )
        last = store.last_runs([s.id for s in found])
        # Only for the schedules returned: a few indexed reads each (see tickwork.admin.health).
        assessed = health_of(store, found, self.health_policy)
        return [ScheduleInfo.of(s, last.get(s.id), assessed[s.id]) for s in found]

    def count(
        self,
        *,
        state: str | ScheduleState | None = None,
        enabled: bool | None = None,
        search: str | None = None,
        failing: bool | None = None,
        health: str | Health | None = None,
        parked: bool | None = None,
    ) -> int:
        """How many schedules :meth:`list` matches without a limit (for a pager)."""
        if health is not None:
            chosen = self._by_health(
                Health(health), None if state is None else ScheduleState(state), enabled, search, failing, parked
            )
            return len(chosen)
        return self.store().count_schedules(
            state=None if state is None else ScheduleState(state),
            enabled=enabled,
            search=search,
            namespace=self.read_in(),
            **_given_filters(failing, parked),
        )

    def next_fires(self, name: str, n: int = 10) -> builtins.list[datetime]:
        """The next ``n`` fire times of a schedule (aware UTC): its stored next fire (which a
        "run now" may have moved), then its trigger's times after it. A disabled schedule's are
        computed from now by the database clock: what it would do once enabled.

        :raises tickwork.ScheduleNotFoundError: if there is no such schedule
        """
        return [moment for moment, _ in self.next_fires_explained(name, n)]

    def next_fires_explained(self, name: str, n: int = 10) -> builtins.list[tuple[datetime, str]]:
        """:meth:`next_fires`, each with why it is not at its trigger's time: ``"moved from
        2026-05-01T09:00:00+02:00: 2026-05-01 is Labor Day (DE-BE)"`` for a fire its holiday
        rule moved (docs/holidays.md), ``""`` for the others.

        :raises tickwork.ScheduleNotFoundError: if there is no such schedule
        """
        if n < 0:
            raise ValueError(f"n: must be >= 0, got {n}")
        store = self.store()
        schedule = store.get(name, namespace=self.named_in())
        spec = schedule.spec
        # Jitter, bounds and holidays included: the times the schedule fires at (docs/triggers.md#schedule-options).
        fires = fire_times(spec, self.manager)

        def following(after: datetime) -> tuple[datetime, str] | None:
            if isinstance(fires, FireTimes):
                return fires.fire_after(after)
            moment = fires.next_after(after)
            return None if moment is None else (moment, "")

        out: builtins.list[tuple[datetime, str]] = []
        stored = schedule.next_fire if spec.enabled else None
        if stored is None:
            found = following(store.now())
        else:
            # The stored next fire (a "run now" may have moved it): its note if the rule put it there.
            found = (stored, fires.note_of(stored) if isinstance(fires, FireTimes) else "")
        while found is not None and len(out) < n:
            out.append((utc(found[0]), found[1]))
            found = following(found[0])
        return out

    def in_flight(self) -> dict[str, int]:
        """How many schedules each node holds right now (claimed, running or about to run)."""
        counts: dict[str, int] = {}
        for schedule in self.store().find_schedules(state=ScheduleState.RUNNING):
            if schedule.claimed_by is not None:
                counts[schedule.claimed_by] = counts.get(schedule.claimed_by, 0) + 1
        return counts

    def owned_buckets(self, nodes: Iterable[NodeInfo] | None = None) -> dict[str, int | None]:
        """How many of the hash buckets each live node owns under the configured membership
        (``None``: all of them, for memberships that do not partition, such as ``single``)."""
        live = sorted(n.id for n in (self.nodes() if nodes is None else nodes) if n.live)
        membership = build_membership(self.config, self.manager)
        out: dict[str, int | None] = {}
        for node_id in live:
            owned = membership.buckets_for(node_id, live)
            out[node_id] = None if owned is None else len(owned)
        return out

    def history(
        self,
        schedule: str | Iterable[str] | None = None,
        status: str | RunStatus | Iterable[str | RunStatus] | None = None,
        since: datetime | timedelta | None = None,
        until: datetime | timedelta | None = None,
        node: str | None = None,
        limit: int = 100,
    ) -> builtins.list[RunRecord]:
        """Runs, latest scheduled time first (the latest attempt first within one fire).

        :param schedule: the runs of this schedule, or of these schedules (several names)
        :param status: one status or several (``failed``, ``timed_out``, ...)
        :param since: runs scheduled at or after this aware datetime, or this long before now by
            the database clock (a timedelta); ``until``: strictly before, the same way
        :param node: runs started by this node
        :raises tickwork.ScheduleNotFoundError: if ``schedule`` names no schedule
        """
        if limit < 1:
            raise ValueError(f"limit: must be >= 1, got {limit}")
        store = self.store()
        names: builtins.list[str | None] = (
            [schedule] if schedule is None or isinstance(schedule, str) else list(dict.fromkeys(schedule)) or [None]
        )
        for name in names:
            if name is None:
                continue
            # A typo'd name is an error, not an empty history: in this namespace, or across every
            # one ("*") in any.
            if self.read_in() is not None:
                store.get(name, namespace=self.named_in())
            elif not any(s.name == name for s in store.find_schedules(search=name)):
                raise ScheduleNotFoundError(name, known=self.names())
        found: builtins.list[RunRecord] = []
        for name in names:
            found += store.find_runs(
                schedule=name,
                status=_enum_list(RunStatus, status),
                since=_as_utc("since", since, store.now),
                until=_as_utc("until", until, store.now),
                node=node,
                limit=limit,
                namespace=self.read_in(),
            )
        if len(names) == 1:
            return found
        # The latest `limit` of several schedules are among the latest `limit` of each.
        found.sort(key=lambda r: (r.scheduled_for, r.attempt, r.id), reverse=True)
        return found[:limit]

    def run(self, run_id: int) -> RunRecord | None:
        """One run of the history by its id (``RunRecord.id``), or ``None``."""
        return self.store().get_run(run_id)

    def nodes(self) -> builtins.list[NodeInfo]:
        """Node records with their heartbeat age (database clock) and whether they are live."""
        store = self.store()
        now = store.now()
        ttl = self.node_ttl()
        out = []
        for node in store.nodes():
            age = max(0.0, (now - node.heartbeat_at).total_seconds())
            out.append(NodeInfo(node.id, node.started_at, node.heartbeat_at, age, age <= ttl, node.executors))
        return out

    def live_executors(self) -> LiveExecutors:
        """The live nodes as they are now, to judge a schedule's executor by: whether they run
        it (:meth:`add` and the other writes refuse one a live node would park). None are live
        on a database that does not exist yet (nothing is created to find that out)."""
        where = str(self.config.source) if self.config.source else "the defaults (no config file was found)"
        if not self._opened and not self._store.database_exists():
            return LiveExecutors([], where)
        return LiveExecutors(self.nodes(), where)

    def node_ttl(self) -> float:
        """Seconds after its last heartbeat that a node counts as dead (``[membership] node_ttl``)."""
        return build_membership(self.config, self.manager).node_ttl


def _given_filters(failing: bool | None, parked: bool | None) -> dict[str, bool]:
    """The store filters that were given: passed only when used, so a third-party store written
    before ``failing`` or ``parked`` existed keeps working."""
    given = {"failing": failing, "parked": parked}
    return {key: value for key, value in given.items() if value is not None}


def missing_message(config: Config, store: Store) -> str:
    """Why a read found no database: which one, and which configuration pointed there."""
    what = store.describe()
    if config.source is None:
        return (
            f"{what} does not exist: no config file was given or found ($TICKWORK_CONFIG, ./tickwork.toml), "
            "so the default store was used; pass the config file your node uses (-c FILE)"
        )
    return (
        f"{what} does not exist (the store of {config.source}); start a node with that config "
        "or run `tickwork db upgrade` to create it"
    )


def connect(
    config: ConfigSource = None, *, path: str | os.PathLike[str] | None = None, namespace: str = DEFAULT_NAMESPACE
) -> Admin:
    """Open the admin API on a configuration: a TOML path (``None``: ``$TICKWORK_CONFIG``, then
    ``./tickwork.toml``, then the defaults, as the CLI does), a dict shaped like the file, or a
    :class:`~tickwork.config.Config`; ``namespace``: the one schedules are named in and listed
    from (``"*"``: every namespace, for reads; docs/teams.md). Use it as a context manager, or
    call ``close()``.

    :raises tickwork.ConfigError: if the configuration is invalid
    """
    if config is not None and path is not None:
        raise TypeError("connect: pass the configuration once (positionally or as path=)")
    return Admin(load_config(config if config is not None else path), namespace=namespace)
