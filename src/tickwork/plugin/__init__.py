"""Writing a tickwork plugin.

A plugin is a module that implements some of the hooks in :mod:`tickwork.plugin.specs`, decorated
with :data:`hookimpl`, and is named under the ``tickwork`` entry-point group of its package::

    # pyproject.toml of your package
    [project.entry-points.tickwork]
    myexec = "myexec.plugin"

    # myexec/plugin.py
    from tickwork.plugin import Registry, hookimpl
    from tickwork.abc import Executor

    class MyExecutor(Executor): ...

    @hookimpl
    def tickwork_register_executors(registry: Registry[type[Executor]]) -> None:
        registry.add("myexec", MyExecutor)

Once the package is installed, ``[executor.myexec]`` in ``tickwork.toml`` configures it and
schedules name it. The built-in stores, triggers, executors and memberships under ``plugins/``
register exactly this way, and so do the ``web`` and ``bench`` commands (a :class:`Command`
registered through ``tickwork_register_commands``) and the built-in commands themselves.
Lifecycle hooks (``tickwork_node_started``, ``tickwork_runs_finished``, ...) tell observers what a
node does; their rules are in :mod:`tickwork.plugin.specs`.

What this package holds, for plugin authors:

- :mod:`~tickwork.plugin.specs`: every hook, with its parameters;
- :class:`Registry`: what the registration hooks fill; :class:`Command`: a ``tickwork NAME``
  subcommand, :class:`CommandGroup` one with actions (``tickwork NAME ACTION``);
- for executors: :mod:`~tickwork.plugin.calls` (calling a job's target, reporting an outcome
  once), :mod:`~tickwork.plugin.allowed` (``allowed_modules``), :mod:`~tickwork.plugin.runcontext`
  (what :func:`tickwork.current_run` returns inside a job), :mod:`~tickwork.plugin.tracebacks`;
  :mod:`~tickwork.plugin.signature` signs the HTTP executor's requests and checks them in receivers;
- :mod:`~tickwork.plugin.manager` (loading entry points), :mod:`~tickwork.plugin.assembly` and
  :mod:`~tickwork.plugin.lifecycle` (calling the lifecycle hooks safely), which the core uses.

This package sits below the engine and the node and imports neither (``tests/test_layout.py``):
the engine's events reach the hooks through the node's wiring (:mod:`tickwork.node.hooklistener`).

docs/plugins.md is the guide, with a store, an executor and a command worked through.
"""

from __future__ import annotations

from .command import Command, CommandGroup
from .registry import Deferred, Registry
from .specs import hookimpl, hookspec

__all__ = ["Command", "CommandGroup", "Deferred", "Registry", "hookimpl", "hookspec"]
