"""The pluggy hooks through which plugins register implementations.

A plugin is a module registered under the ``tickwork`` entry-point group::

    [project.entry-points.tickwork]
    myexec = "myexec.plugin"

that defines one or more of the functions below, decorated with :data:`tickwork.hookimpl`.
Each hook is called exactly once per plugin manager, when the manager loads its plugins (the first
time a node, the CLI or :func:`tickwork.next_fire_times` needs a registry), before any config is
read. A hook must only register; it must not open connections or start threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from .abc import Executor, Membership, Store, Trigger
    from .commands import Command
    from .registry import Registry

NAME = "tickwork"

hookspec = pluggy.HookspecMarker(NAME)
hookimpl = pluggy.HookimplMarker(NAME)


@hookspec
def tickwork_register_stores(registry: Registry[type[Store]]) -> None:
    """Register store classes by name, e.g. ``registry.add("sqlite", SQLiteStore)``.

    Called once when plugins are loaded. A store named in ``[store] plugin`` is looked up here.
    """


@hookspec
def tickwork_register_triggers(registry: Registry[type[Trigger]]) -> None:
    """Register trigger classes by kind, e.g. ``registry.add("cron", CronTrigger)``.

    Called once when plugins are loaded. When an expression comes without a kind, the triggers'
    :meth:`~tickwork.abc.Trigger.recognizes` are asked in registration order.
    """


@hookspec
def tickwork_register_executors(registry: Registry[type[Executor]]) -> None:
    """Register executor classes by name, e.g. ``registry.add("http", HTTPExecutor)``.

    Called once when plugins are loaded. Schedules name their executor; ``[executor.NAME]`` tables
    in the config hold each executor's options.
    """


@hookspec
def tickwork_register_memberships(registry: Registry[type[Membership]]) -> None:
    """Register membership classes by name, e.g. ``registry.add("hashring", HashRing)``.

    Called once when plugins are loaded. ``[membership] plugin`` is looked up here.
    """


@hookspec
def tickwork_register_commands(registry: Registry[type[Command]]) -> None:
    """Register ``tickwork`` subcommands by name, e.g. ``registry.add("web", WebCommand)``.

    Called once when plugins are loaded. The command line adds each as ``tickwork NAME``; a name
    that a built-in command already uses is an error. See :class:`tickwork.commands.Command`.
    """
