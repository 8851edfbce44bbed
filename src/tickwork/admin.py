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
import collections
import os
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any

from . import schedules
from .abc import Store
from .adminspec import SpecBuilder
from .config import Config, load, parse, plugin_manager_for
from .errors import ConfigError, DatabaseMissingError, ScheduleNotFoundError, TickworkError
from .info import NodeInfo, ScheduleInfo
from .node import build_membership, build_store
from .plugins import PluginManager
from .structures import MisfirePolicy, RunRecord, RunStatus, Schedule, ScheduleSpec, ScheduleState, utc
from .triggers import get_trigger

#: Node liveness when the membership plugin has no ``node_ttl`` (the heartbeat plugins' default).
DEFAULT_NODE_TTL = 4.0

#: The keyword names of :meth:`Admin.add` that :meth:`Admin.update` accepts too.
UPDATABLE = (
    "expression",
    "target",
    "kind",
    "tz",
    "executor",
    "args",
    "timeout",
    "retries",
    "retry_backoff",
    "misfire",
    "enabled",
)

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


class Admin:
    """Schedules, history and nodes of one configuration's store; use :func:`connect`.

    The store is opened on first use and closed by :meth:`close` (or leaving the ``with`` block).
    Not thread-safe: give each thread its own ``Admin``.
    """

    def __init__(self, config: Config, *, manager: PluginManager | None = None, store: Store | None = None) -> None:
        self.config = config
        self.manager = manager or plugin_manager_for(config)
        self._store = store or build_store(config, self.manager)
        self._opened = False
        #: Builds and validates specs against this configuration's triggers and executors.
        self.specs = SpecBuilder(config, self.manager)

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
        schedule = store.get(name)
        return ScheduleInfo.of(schedule, store.last_runs([schedule.id]).get(schedule.id))

    def list(
        self,
        *,
        state: str | ScheduleState | None = None,
        enabled: bool | None = None,
        search: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        failing: bool | None = None,
    ) -> builtins.list[ScheduleInfo]:
        """Schedules ordered by next fire time (disabled and finished ones last), then name.

        :param state: ``idle`` or ``running``
        :param enabled: only enabled (``True``) or disabled (``False``) ones
        :param search: only those whose name or target contains this text, in any case
        :param limit: at most this many; ``offset`` skips the first ones (pagination)
        :param failing: only those whose last run failed or timed out (``True``), or the others
        """
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
            # Passed only when used: a third-party store written before `failing` existed keeps working.
            **({} if failing is None else {"failing": failing}),
        )
        last = store.last_runs([s.id for s in found])
        return [ScheduleInfo.of(s, last.get(s.id)) for s in found]

    def count(
        self,
        *,
        state: str | ScheduleState | None = None,
        enabled: bool | None = None,
        search: str | None = None,
        failing: bool | None = None,
    ) -> int:
        """How many schedules :meth:`list` matches without a limit (for a pager)."""
        return self.store().count_schedules(
            state=None if state is None else ScheduleState(state),
            enabled=enabled,
            search=search,
            **({} if failing is None else {"failing": failing}),
        )

    def next_fires(self, name: str, n: int = 10) -> builtins.list[datetime]:
        """The next ``n`` fire times of a schedule (aware UTC): its stored next fire (which a
        "run now" may have moved), then its trigger's times after it. A disabled schedule's are
        computed from now by the database clock: what it would do once enabled.

        :raises tickwork.ScheduleNotFoundError: if there is no such schedule
        """
        if n < 0:
            raise ValueError(f"n: must be >= 0, got {n}")
        store = self.store()
        schedule = store.get(name)
        spec = schedule.spec
        trigger = get_trigger(spec.trigger_kind, spec.expression, spec.timezone, self.manager)
        out: builtins.list[datetime] = []
        current = schedule.next_fire if spec.enabled else None
        if current is None:
            current = trigger.next_after(store.now())
        while current is not None and len(out) < n:
            out.append(utc(current))
            current = trigger.next_after(current)
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
        schedule: str | None = None,
        status: str | RunStatus | Iterable[str | RunStatus] | None = None,
        since: datetime | timedelta | None = None,
        until: datetime | timedelta | None = None,
        node: str | None = None,
        limit: int = 100,
    ) -> builtins.list[RunRecord]:
        """Runs, latest scheduled time first (the latest attempt first within one fire).

        :param status: one status or several (``failed``, ``timed_out``, ...)
        :param since: runs scheduled at or after this aware datetime, or this long before now by
            the database clock (a timedelta); ``until``: strictly before, the same way
        :param node: runs started by this node
        :raises tickwork.ScheduleNotFoundError: if ``schedule`` names no schedule
        """
        if limit < 1:
            raise ValueError(f"limit: must be >= 1, got {limit}")
        store = self.store()
        if schedule is not None:
            store.get(schedule)  # a typo'd name is an error, not an empty history
        return store.find_runs(
            schedule=schedule,
            status=_enum_list(RunStatus, status),
            since=_as_utc("since", since, store.now),
            until=_as_utc("until", until, store.now),
            node=node,
            limit=limit,
        )

    def nodes(self) -> builtins.list[NodeInfo]:
        """Node records with their heartbeat age (database clock) and whether they are live."""
        store = self.store()
        now = store.now()
        ttl = self.node_ttl()
        out = []
        for node in store.nodes():
            age = max(0.0, (now - node.heartbeat_at).total_seconds())
            out.append(NodeInfo(node.id, node.started_at, node.heartbeat_at, age, age <= ttl))
        return out

    def node_ttl(self) -> float:
        """Seconds after its last heartbeat that a node counts as dead (``[membership] node_ttl``)."""
        ttl = getattr(build_membership(self.config, self.manager), "node_ttl", None)
        return float(ttl) if isinstance(ttl, int | float) else DEFAULT_NODE_TTL

    # -- writing --------------------------------------------------------------------------------

    def add(
        self,
        name: str,
        expression: str,
        target: str,
        *,
        kind: str | None = None,
        tz: str = "UTC",
        executor: str | None = None,
        args: Mapping[str, Any] | None = None,
        timeout: float | timedelta = 300,
        retries: int = 0,
        retry_backoff: float | timedelta = 10,
        misfire: str | MisfirePolicy | None = None,
        enabled: bool = True,
        replace: bool = False,
    ) -> ScheduleInfo:
        """Validate and create a run-time schedule, first due at its next fire after now.

        :param kind: trigger kind; recognised from ``expression`` when omitted
        :param executor: executor name (default ``[scheduler] default_executor``); it must be
            configured, since a node runs only its configured executors
        :param args: keyword arguments for the target (checked against its parameters)
        :param replace: replace an existing schedule of that name instead of failing
        :raises tickwork.ScheduleExistsError: if the name is taken (and not ``replace``)
        :raises tickwork.ConfigError, tickwork.TriggerError, tickwork.ExecutorError: invalid input
        """
        spec = self.spec(
            name,
            expression,
            target,
            kind=kind,
            tz=tz,
            executor=executor,
            args=args,
            timeout=timeout,
            retries=retries,
            retry_backoff=retry_backoff,
            misfire=misfire,
            enabled=enabled,
        )
        return self._write(spec, replace)

    def add_many(
        self, specs: Iterable[ScheduleSpec | Mapping[str, Any]], *, replace: bool = False
    ) -> builtins.list[ScheduleInfo]:
        """Add several schedules: each a :class:`ScheduleSpec` or a dict of :meth:`add`'s
        arguments. All are validated first, then written in one transaction with batched
        statements: either every schedule is added or none is.

        :raises tickwork.ScheduleExistsError: if a name is taken (and not ``replace``); nothing
            is written
        """
        checked = [self.specs.check(s) if isinstance(s, ScheduleSpec) else self.spec(**s) for s in specs]
        counts = collections.Counter(s.name for s in checked)
        duplicates = sorted(n for n, c in counts.items() if c > 1)
        if duplicates:
            raise ConfigError(f"add_many: schedule names given more than once: {', '.join(duplicates)}")
        written = schedules.add_many(self.store(write=True), checked, self.manager, replace=replace)
        last = self.store().last_runs([s.id for s in written]) if replace else {}
        return [ScheduleInfo.of(s, last.get(s.id)) for s in written]

    def _write(self, spec: ScheduleSpec, replace: bool) -> ScheduleInfo:
        store = self.store(write=True)
        if replace:
            try:
                current = store.get(spec.name)
            except ScheduleNotFoundError:
                pass
            else:
                if current.spec.module is not None:
                    raise TickworkError(
                        f"schedule {spec.name!r} is declared in {current.spec.module}; "
                        "change the declaration, not the stored copy"
                    )
                return self._info(schedules.update(store, spec, self.manager, recompute=True))
        return self._info(schedules.add(store, spec, self.manager))

    def update(self, name: str, **fields: Any) -> ScheduleInfo:
        """Change some fields of a schedule (the names :meth:`add` takes) and keep the rest.

        The next fire time is recomputed from now when the trigger (expression, kind, zone)
        changes or the schedule is enabled; otherwise it is kept, so a pending "run now" stays.
        A run in progress ends normally.

        :raises tickwork.ScheduleNotFoundError: if there is no such schedule
        """
        unknown = sorted(set(fields) - set(UPDATABLE))
        if unknown:
            raise ConfigError(f"update: unknown field(s) {', '.join(unknown)}; fields: {', '.join(UPDATABLE)}")
        store = self.store(write=True)
        current = store.get(name).spec
        merged: dict[str, Any] = {
            "expression": current.expression,
            "target": current.target,
            "kind": current.trigger_kind,
            "tz": current.timezone,
            "executor": current.executor,
            "args": current.arguments,
            "timeout": current.timeout,
            "retries": current.retries,
            "retry_backoff": current.retry_backoff,
            "misfire": current.misfire,
            "enabled": current.enabled,
        }
        if "expression" in fields and "kind" not in fields:
            merged["kind"] = None  # recognise the new expression's kind
        merged.update(fields)
        spec = self.spec(name, module=current.module, **merged)
        trigger_changed = spec.trigger_key != current.trigger_key
        recompute = trigger_changed or (spec.enabled and not current.enabled)
        return self._info(schedules.update(store, spec, self.manager, recompute=recompute))

    def enable(self, name: str) -> ScheduleInfo:
        """Enable a schedule; its next fire is computed from now (time spent disabled is not caught up)."""
        return self._info(schedules.set_enabled(self.store(write=True), name, True, self.manager))

    def disable(self, name: str) -> ScheduleInfo:
        return self._info(schedules.set_enabled(self.store(write=True), name, False, self.manager))

    def trigger(self, name: str) -> ScheduleInfo:
        """Make a schedule due now (by the database clock): a node runs it at once.

        :raises tickwork.TickworkError: if it is disabled (a disabled schedule is never run)
        """
        store = self.store(write=True)
        if not store.get(name).spec.enabled:
            raise TickworkError(f"schedule {name!r} is disabled; enable it first (tickwork jobs enable)")
        return self._info(store.fire_now(name))

    def remove(self, name: str) -> ScheduleInfo:
        """Delete a schedule and its history; returns it as it was. A schedule declared in code
        (``.module`` set) comes back at the next node start unless its declaration is removed."""
        store = self.store(write=True)
        before = self._info(store.get(name))
        store.remove(name)
        return before

    def remove_many(self, names: Iterable[str]) -> builtins.list[ScheduleInfo]:
        """Delete several schedules and their history in one transaction: either every one is
        removed or none is. A name given twice counts once. Returns them as they were (without
        their last run, which went with the history), in the order given. Declared ones come
        back at the next node start unless their declarations are removed.

        :raises tickwork.ScheduleNotFoundError: naming every name that has no schedule (``.names``);
            nothing is removed
        """
        if isinstance(names, str):
            raise ConfigError(f"remove_many: expected a list of names, got the string {names!r}")
        unique = builtins.list(dict.fromkeys(names))
        if not unique:
            return []
        return [ScheduleInfo.of(s, None) for s in schedules.remove_many(self.store(write=True), unique)]

    # -- validation -----------------------------------------------------------------------------

    def spec(self, name: str, expression: str, target: str, **options: Any) -> ScheduleSpec:
        """Build and check the :class:`ScheduleSpec` that :meth:`add` would store (same arguments)."""
        return self.specs.build(name, expression, target, **options)

    def _info(self, schedule: Schedule) -> ScheduleInfo:
        return ScheduleInfo.of(schedule, self.store().last_runs([schedule.id]).get(schedule.id))


def missing_message(config: Config, store: Store) -> str:
    """Why a read found no database: which one, and which configuration pointed there."""
    describe = getattr(store, "describe", None)
    what = str(describe()) if callable(describe) else f"the {config.store.plugin} database"
    if config.source is None:
        return (
            f"{what} does not exist: no config file was given or found ($TICKWORK_CONFIG, ./tickwork.toml), "
            "so the default store was used; pass the config file your node uses (-c FILE)"
        )
    return (
        f"{what} does not exist (the store of {config.source}); start a node with that config "
        "or run `tickwork db upgrade` to create it"
    )


def connect(config: ConfigSource = None, *, path: str | os.PathLike[str] | None = None) -> Admin:
    """Open the admin API on a configuration: a TOML path (``None``: ``$TICKWORK_CONFIG``, then
    ``./tickwork.toml``, then the defaults, as the CLI does), a dict shaped like the file, or a
    :class:`~tickwork.config.Config`. Use it as a context manager, or call ``close()``.

    :raises tickwork.ConfigError: if the configuration is invalid
    """
    if config is not None and path is not None:
        raise TypeError("connect: pass the configuration once (positionally or as path=)")
    return Admin(load_config(config if config is not None else path))
