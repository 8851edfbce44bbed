"""The pluggy hooks of tickwork: registration hooks and lifecycle hooks.

A plugin is a module registered under the ``tickwork`` entry-point group::

    [project.entry-points.tickwork]
    myexec = "myexec.plugin"

that defines one or more of the functions below, decorated with :data:`tickwork.hookimpl`.
Each hook is called exactly once per plugin manager, when the manager loads its plugins (the first
time a node, the CLI or :func:`tickwork.next_fire_times` needs a registry), before any config is
read. A hook must only register; it must not open connections or start threads.

Lifecycle hooks
---------------
The ``tickwork_node_*``, ``tickwork_runs_*``, ``tickwork_fires_skipped``,
``tickwork_membership_changed`` and ``tickwork_health_changed`` hooks tell observers (metrics,
tracing, alerting) what a running node does. Rules for implementers:

- Implement only the arguments you need: pluggy passes a subset by name.
- The run hooks are **batch-shaped**: one call per claimed or written batch, so a 10,000-fire
  burst makes about a hundred calls. Do per-item work in a tight loop, never I/O per item.
- They are called from the node's engine thread (``tickwork_membership_changed`` from the
  heartbeat thread) and must return quickly; hand slow work to your own thread.
- An implementation that raises is logged (with its traceback, once per plugin and hook) and
  ignored; the other plugins' implementations are still called and the node keeps running.
- A plugin module registered under the ``tickwork`` entry-point group receives them without
  any configuration; ``[plugins] block`` turns it off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..abc import Executor, Membership, RunningNode, Store, Trigger
    from ..config.files import Config
    from ..config.tables import ConfigTables
    from ..structures import Finish, HealthChange, JobCall, SkippedFire
    from .command import Command
    from .registry import Registry

NAME = "tickwork"

hookspec = pluggy.HookspecMarker(NAME)
hookimpl = pluggy.HookimplMarker(NAME)


@hookspec
def tickwork_register_stores(registry: Registry[type[Store]]) -> None:
    """Register store classes by name, e.g. ``registry.add("sqlite", SQLiteStore)``.

    :param registry: the store registry; ``registry.add(name, cls)`` adds a
        :class:`~tickwork.abc.Store` subclass (a name registered twice is an error naming both
        plugins)

    Called once per plugin manager, when it loads its plugins, in the thread that first needs the
    manager (a node, the CLI, :func:`tickwork.next_fire_times`), before any config is read. A store
    named in ``[store] plugin`` is looked up here. The return value is ignored.
    """


@hookspec
def tickwork_register_triggers(registry: Registry[type[Trigger]]) -> None:
    """Register trigger classes by kind, e.g. ``registry.add("cron", CronTrigger)``.

    :param registry: the trigger registry; ``registry.add(kind, cls)`` adds a
        :class:`~tickwork.abc.Trigger` subclass (a kind registered twice is an error naming both
        plugins)

    Called once per plugin manager, when it loads its plugins, in the thread that first needs the
    manager, before any config is read. When an expression comes without a kind, the triggers'
    :meth:`~tickwork.abc.Trigger.recognizes` are asked in registration order. The return value is
    ignored.
    """


@hookspec
def tickwork_register_executors(registry: Registry[type[Executor]]) -> None:
    """Register executor classes by name, e.g. ``registry.add("http", HTTPExecutor)``.

    :param registry: the executor registry; ``registry.add(name, cls)`` adds an
        :class:`~tickwork.abc.Executor` subclass (a name registered twice is an error naming both
        plugins)

    Called once per plugin manager, when it loads its plugins, in the thread that first needs the
    manager, before any config is read. Schedules name their executor; ``[executor.NAME]`` tables
    in the config hold each executor's options. The return value is ignored.
    """


@hookspec
def tickwork_register_memberships(registry: Registry[type[Membership]]) -> None:
    """Register membership classes by name, e.g. ``registry.add("hashring", HashRing)``.

    :param registry: the membership registry; ``registry.add(name, cls)`` adds a
        :class:`~tickwork.abc.Membership` subclass (a name registered twice is an error naming
        both plugins)

    Called once per plugin manager, when it loads its plugins, in the thread that first needs the
    manager, before any config is read. ``[membership] plugin`` is looked up here. The return
    value is ignored.
    """


@hookspec
def tickwork_register_commands(registry: Registry[type[Command]]) -> None:
    """Register ``tickwork`` subcommands by name, e.g. ``registry.add("web", WebCommand)``.

    :param registry: the command registry; ``registry.add(name, cls)`` adds a
        :class:`~tickwork.plugin.command.Command` subclass (a name registered twice, or one a
        built-in command uses, is an error)

    Called once per plugin manager, when it loads its plugins, in the thread that first needs the
    manager (for the command line: the main thread, while it builds its parser), before any config
    is read. The command line adds each as ``tickwork NAME``. The return value is ignored.
    """


@hookspec
def tickwork_add_config(tables: ConfigTables) -> None:
    """Declare the configuration tables this plugin reads, e.g. ``tables.add(MetricsConfig)``.

    :param tables: the :class:`~tickwork.config.ConfigTables` of this plugin manager: the core's
        tables, and those plugins declared so far. ``tables.add(section)`` declares the table
        ``[section.table]``, whose keys are the :class:`~tickwork.config.Setting` class attributes
        of ``section`` (a :class:`~tickwork.config.Section` subclass); a name the core or another
        plugin uses is an error naming both.

    Called once when plugins are loaded, after the registration hooks, from the thread that builds
    the plugin manager; the return value is ignored. The file is then read in
    two steps: the core's tables first (``[plugins] block`` decides which plugins load), then the
    plugins' tables, each checked against its declaration: an unknown key, a wrong type or a value
    out of range is an error naming the file and the key, an undeclared table is an error listing
    the known ones, and a table of a blocked plugin says so. The table's keys appear in the
    reference rendered by ``python -m tickwork.config.reference`` and are accepted by
    ``tickwork.Node.from_config(TABLE={...})``.

    Read the values later, where the configuration is given (:func:`tickwork_node_started`, a
    :class:`~tickwork.plugin.command.Command`'s ``run``), with ``config.table(MetricsConfig)`` (the
    defaults when the file has no such table) or ``config.find_table(MetricsConfig)`` (``None``
    then). A declaration holds no state: the same classes serve every configuration.
    """


# -- lifecycle ------------------------------------------------------------------------------------


@hookspec
def tickwork_node_started(node_id: str, config: Config, node: RunningNode) -> None:
    """The node is running: its store is open, declared jobs are synced and its engine is about to
    claim.

    :param node_id: the node's id (``[scheduler] node_id``)
    :param config: the node's :class:`~tickwork.config.Config` (plugins read their own table here,
        e.g. ``config.find_table(MetricsConfig)``, see :func:`tickwork_add_config`)
    :param node: the :class:`tickwork.Node` itself (``node.health()`` answers readiness probes,
        ``node.store`` is its open store)

    Called once per node, from the thread that opens it (the caller of ``Node.start()``,
    ``Node.run()`` or ``Node.open()``; for ``tickwork run``, the main thread), before the engine
    loop starts. A :class:`tickwork.ConfigError` it raises fails the start; anything else is logged
    and ignored. The return value is ignored.
    """


@hookspec
def tickwork_node_stopping(node_id: str) -> None:
    """The node stopped claiming and is about to wait for its running jobs
    (``[scheduler] shutdown_grace``).

    :param node_id: the node's id

    Called once per node, before anything is closed, from the thread that shuts it down (the
    engine's thread ``tickwork-node-<id>`` for a node started with ``Node.start()``, the caller's
    for ``Node.run()``). Runs that end while it waits, and ends still gathered for their batch
    (``[scheduler] end_batch_window``), are reported with :func:`tickwork_runs_finished` after
    this hook. The return value is ignored.
    """


@hookspec
def tickwork_node_stopped(node_id: str) -> None:
    """The node has stopped: runs recorded, claims released, store closed. Release what
    :func:`tickwork_node_started` set up (servers, threads).

    :param node_id: the node's id

    Called once per node, last, from the same thread as :func:`tickwork_node_stopping`. The return
    value is ignored.
    """


@hookspec
def tickwork_runs_started(node_id: str, runs: Sequence[JobCall]) -> None:
    """Runs were handed to their executors; one call per dispatched batch.

    :param node_id: the node that started them
    :param runs: one :class:`~tickwork.structures.JobCall` per run, with ``schedule``,
        ``scheduled_for``, ``run_id``, ``attempt`` and ``node_id``; never empty

    Called from the engine's thread (the one running its loop), right after the batch was
    dispatched: keep it quick. The return value is ignored.
    """


@hookspec
def tickwork_runs_finished(node_id: str, results: Sequence[Finish]) -> None:
    """Run ends were written to the store; one call per written batch.

    :param node_id: the node that wrote them
    :param results: one :class:`~tickwork.structures.Finish` per run, with the ``claim`` (schedule
        spec, ``scheduled_for``, ``run_id``, ``attempt``), the ``outcome`` (``status``, ``error``),
        ``started_at`` and ``finished_at`` (database clock); never empty. Fires recorded as
        skipped come through :func:`tickwork_fires_skipped` instead.

    Called from the engine's thread after each batch write (while the node stops, from the thread
    shutting it down). The return value is ignored.
    """


@hookspec
def tickwork_fires_skipped(node_id: str, skipped: Sequence[SkippedFire]) -> None:
    """Fire times were recorded ``skipped`` (misfire policy, still running, already recorded).

    :param node_id: the node that recorded them
    :param skipped: one :class:`~tickwork.structures.SkippedFire` per fire time, with
        ``schedule``, ``scheduled_for`` and ``reason``; never empty

    Called from the engine's thread after the batch write that recorded them, like
    :func:`tickwork_runs_finished`. The return value is ignored.
    """


@hookspec
def tickwork_retries_planned(node_id: str, ended: Sequence[Finish]) -> None:
    """Failed attempts were written ended, and their fires will be retried (``retries``).

    :param node_id: the node that will retry them
    :param ended: one :class:`~tickwork.structures.Finish` per failed attempt, with the ``claim``
        (``run_id``, ``attempt``), the ``outcome`` (``error``, and ``exception`` when the job
        raised in this process), ``started_at`` and ``finished_at``; its ``next_fire`` is when the
        retry is due (database clock; ``None`` for a backfilled fire, retried when the backfill's
        queue takes it again). Never empty. These ends never come through
        :func:`tickwork_runs_finished`; the retry's start comes through
        :func:`tickwork_runs_started`, with the next attempt number.

    Called from the engine's thread as each retry is planned. The return value is ignored.
    """


@hookspec
def tickwork_membership_changed(node_id: str, members: Sequence[str], owned: Sequence[int] | None) -> None:
    """The live nodes or this node's share changed (and once at start).

    :param node_id: the node whose view this is
    :param members: ids of the live nodes as this node sees them (sorted)
    :param owned: the hash buckets this node attempts; ``None`` means all of them

    Called once from the thread that opens the node, then from the membership's own thread (the
    heartbeat thread of the built-in memberships) whenever the view changes. The return value is
    ignored.
    """


@hookspec
def tickwork_claimed(node_id: str, count: int, seconds: float) -> None:
    """One claim statement returned.

    :param node_id: the node that claimed
    :param count: how many claims it returned (0 included)
    :param seconds: how long the statement took (the node's monotonic clock)

    Called from the engine's thread after every claim statement, so keep it to a counter update.
    The return value is ignored.
    """


@hookspec
def tickwork_store_error(node_id: str, error: Exception) -> None:
    """A store call of the engine's loop failed (database unreachable, ...); the engine backs off
    and retries.

    :param node_id: the node whose call failed
    :param error: the :class:`tickwork.errors.StoreError` raised

    Called from the engine's thread, once per failed pass. The return value is ignored.
    """


@hookspec
def tickwork_health_changed(node_id: str, changes: Sequence[HealthChange]) -> None:
    """Schedules' health to announce (states ``healthy``, ``late``, ``failing``, ``overdue``,
    ``paused``, ``parked``, ...; see docs/observability.md), as Alertmanager would: each
    :class:`~tickwork.structures.HealthChange` has a ``kind``: ``firing`` (a state that needs
    attention began, also one that was already there when the sweep first saw the schedule),
    ``resolved`` (it ended), ``repeat`` (still there after ``[health] repeat_interval``; ``since``
    says since when) or ``changed`` (between ``healthy`` and ``paused``).

    :param node_id: the node that saw the changes: the one live node (the lowest id) that sweeps
        the schedules' health every ``[health] watch_interval`` seconds
    :param changes: one :class:`~tickwork.structures.HealthChange` per schedule to announce,
        with the old state and the new one with its reason; never empty

    Only nodes where an implementation of :func:`tickwork_watch_health` answers true sweep.
    Called once per announcement across the cluster: what was announced is kept in the store,
    claimed by a conditional write, so a node that restarts or takes over the sweep announces
    nothing twice and misses nothing. Called from the sweep's own thread; hand slow work (a
    webhook, an e-mail) to your own thread. The return value is ignored.
    """


@hookspec
def tickwork_watch_health(node_id: str, config: Config) -> bool:
    """Whether this node should watch schedule health for :func:`tickwork_health_changed`.

    :param node_id: the node being started
    :param config: its configuration (answer true when your own table is present, say)

    Called once, from the thread that opens the node, after :func:`tickwork_node_started`. The
    return value: true to have the node sweep health; when no implementation answers true, the
    node does not sweep (the sweep reads every schedule's health each ``[health]
    watch_interval``, a cost no node should pay for nobody).
    """
    return False
