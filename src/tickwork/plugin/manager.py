"""The plugin manager: loads ``tickwork`` entry points, honours blocked names, fills registries."""

from __future__ import annotations

import importlib
import logging
import pkgutil
import threading
from collections.abc import Callable, Iterable
from importlib.metadata import entry_points
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

from ..abc import Executor, Membership, Store, Trigger
from ..config.tables import ConfigTables, use_plugin_tables
from ..errors import ConfigError, did_you_mean
from . import specs as hookspecs
from .allowed import AllowedModules
from .command import Command
from .registry import Registry

if TYPE_CHECKING:
    from ..config.files import Config

ENTRY_POINT_GROUP = "tickwork"

#: The core's own plugins, by module: registered before any entry point and never blocked (tox 4
#: registers its own subcommands the same way). The built-in commands are registered through the
#: hook third-party commands use, so that ``tickwork run`` and ``tickwork web`` are made alike.
#: Named, as entry points name plugins, not imported here: the commands sit above this package.
INTERNAL_PLUGINS: tuple[str, ...] = ("tickwork.cli.commands",)

log = logging.getLogger("tickwork.plugins")


class PluginManager:
    """Loads plugins and exposes one registry per interface.

    :param block: plugin (entry-point) names not to load, e.g. ``["http"]``
    :param extra: additional plugin modules or objects to register, as tests or embedding
        applications do without packaging an entry point
    :param entry_points_enabled: set to ``False`` to load only ``extra`` and the core's own
        plugins (isolated tests)
    """

    def __init__(
        self,
        *,
        block: Iterable[str] = (),
        extra: Iterable[object] = (),
        entry_points_enabled: bool = True,
    ) -> None:
        self.blocked = frozenset(block)
        self._pm = pluggy.PluginManager(hookspecs.NAME)
        self._pm.add_hookspecs(hookspecs)
        self.loaded: dict[str, object] = {}
        #: The names of :data:`INTERNAL_PLUGINS`, loaded whatever ``block`` says.
        self.internal = frozenset(INTERNAL_PLUGINS)
        for module in INTERNAL_PLUGINS:
            self._register(module, importlib.import_module(module))
        if entry_points_enabled:
            installed = entry_points(group=ENTRY_POINT_GROUP)
            for name in sorted(self.blocked - {ep.name for ep in installed}):
                # Not an error: a deployment may block a plugin it has not installed. A typo
                # would otherwise block nothing, silently.
                log.warning(
                    "[plugins] block lists %r, which no installed plugin is called%s",
                    name,
                    did_you_mean(name, [ep.name for ep in installed]),
                )
            for ep in installed:
                if ep.name in self.blocked or ep.name in self.loaded:
                    continue
                try:
                    plugin = ep.load()
                except Exception as exc:  # a broken third-party plugin must name itself
                    raise ConfigError(f"cannot load tickwork plugin {ep.name!r} ({ep.value}): {exc}") from exc
                self._register(ep.name, plugin)
        for obj in extra:
            name = obj.__name__ if isinstance(obj, ModuleType) else type(obj).__name__
            self._register(name, obj)
        try:
            # A hook implementation whose name matches no hook (a typo) is an error, not ignored.
            self._pm.check_pending()
        except pluggy.PluginValidationError as exc:
            raise ConfigError(f"tickwork plugin {self._pm.get_name(exc.plugin)!r}: {exc}") from None
        self.stores: Registry[type[Store]] = Registry("store")
        self.triggers: Registry[type[Trigger]] = Registry("trigger")
        self.executors: Registry[type[Executor]] = Registry("executor")
        self.memberships: Registry[type[Membership]] = Registry("membership")
        self.commands: Registry[type[Command]] = Registry("command")
        hook = self._pm.hook
        registries: tuple[tuple[str, Registry[Any]], ...] = (
            ("tickwork_register_stores", self.stores),
            ("tickwork_register_triggers", self.triggers),
            ("tickwork_register_executors", self.executors),
            ("tickwork_register_memberships", self.memberships),
            ("tickwork_register_commands", self.commands),
        )
        for hook_name, registry in registries:
            caller = getattr(hook, hook_name)
            # Call plugin by plugin so a duplicate name can be blamed on the plugin that added it.
            for impl in reversed(caller.get_hookimpls()):
                registry.current_plugin = impl.plugin_name
                impl.function(registry=registry)
        #: The tables a configuration may have: the core's and those these plugins declare.
        self.config_tables = ConfigTables()
        for impl in reversed(hook.tickwork_add_config.get_hookimpls()):
            self.config_tables.current_plugin = impl.plugin_name
            impl.function(tables=self.config_tables)
        self.config_tables.current_plugin = None
        # Each store, executor and membership declares its options as a Section of its own: the
        # parser checks its table with it and the reference renders it (``[store.sqlite]``).
        kinds: tuple[tuple[str, Registry[Any]], ...] = (
            ("store", self.stores),
            ("executor", self.executors),
            ("membership", self.memberships),
        )
        for kind, registry in kinds:
            for name in registry.names():
                self.config_tables.add_options(kind, name, registry.section_of(name))

    def _register(self, name: str, plugin: object) -> None:
        self._pm.register(plugin, name=name)
        self.loaded[name] = plugin

    def implementations(self, hook_name: str) -> list[tuple[str, Callable[..., object], tuple[str, ...]]]:
        """(plugin name, function, argument names) of each implementation of ``hook_name``, in
        pluggy's call order."""
        caller = getattr(self._pm.hook, hook_name)
        return [(impl.plugin_name, impl.function, tuple(impl.argnames)) for impl in reversed(caller.get_hookimpls())]

    @property
    def plugin_names(self) -> list[str]:
        return sorted(self.loaded)


_default: PluginManager | None = None
_default_lock = threading.RLock()
# Managers built for a configuration, by the plugins it blocks: a process builds one.
_for_blocks: dict[frozenset[str], PluginManager] = {}


def default_manager() -> PluginManager:
    """The process's manager: the one built for the configuration (:func:`manager_for_blocks`),
    or, before any configuration was read, one over every installed entry point."""
    global _default
    if _default is not None:  # no lock once created: this runs for every fire
        return _default
    with _default_lock:
        if _default is None:
            _default = manager_for_blocks(())
        return _default


def manager_for_blocks(block: Iterable[str]) -> PluginManager:
    """The process's manager for a configuration blocking ``block``: built once (a blocked
    plugin is never imported), then shared by the engine, the decorators, the CLI and every
    lookup without an explicit manager (it becomes :func:`default_manager`)."""
    global _default
    with _default_lock:
        manager = _default = _built_for_blocks(frozenset(block))
        return manager


def _built_for_blocks(key: frozenset[str]) -> PluginManager:
    with _default_lock:
        manager = _for_blocks.get(key)
        if manager is None:
            manager = _for_blocks[key] = PluginManager(block=key)
        return manager


def config_tables_for(block: Iterable[str]) -> ConfigTables:
    """The tables a configuration blocking ``block`` may have: the core's and those of the
    plugins loaded without ``block`` (their manager is built once, as by
    :func:`manager_for_blocks`, but reading a configuration does not make it the default)."""
    return _built_for_blocks(frozenset(block)).config_tables


# The configuration reads the plugins' tables through this (it cannot import this module).
use_plugin_tables(config_tables_for)


def _import_module(name: str) -> object:
    """``importlib.import_module``, with "did you mean" when the module (or a package on its path)
    does not exist; an import the module itself makes that fails is raised as it is."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if not missing or not (name == missing or name.startswith(missing + ".")):
            raise
        parent, _, _ = missing.rpartition(".")
        try:
            path = getattr(importlib.import_module(parent), "__path__", None) if parent else None
        except ImportError:
            raise exc from None
        siblings = [m.name for m in pkgutil.iter_modules(path)] if path is not None or not parent else []
        known = [f"{parent}.{s}" if parent else s for s in siblings]
        raise ModuleNotFoundError(f"No module named {missing!r}{did_you_mean(missing, known)}", name=missing) from None


def load_object(reference: str, allowed: AllowedModules | None = None) -> object:
    """Import ``module:attribute.path`` and return the object.

    :param allowed: when given, the module is checked against it before it is imported, and the
        attribute path and what it reaches after (:meth:`AllowedModules.walk`)
    :raises tickwork.errors.ExecutorError: if ``allowed`` refuses the reference
    """
    module_name, sep, attr_path = reference.partition(":")
    if not sep or not module_name or not attr_path:
        raise ValueError(f"reference must look like 'package.module:function', got {reference!r}")
    if allowed is not None:
        allowed.check(reference)  # before importing: importing a module runs its code
        return allowed.walk(reference, importlib.import_module(module_name))
    obj: object = _import_module(module_name)
    reached = module_name
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            public = [name for name in dir(obj) if not name.startswith("_")]
            owner = f"module {reached!r}" if reached == module_name else repr(reached)  # Python's own wording
            raise AttributeError(f"{owner} has no attribute {part!r}{did_you_mean(part, public)}") from None
        reached = f"{reached}.{part}"
    return obj


def plugin_manager_for(config: Config) -> PluginManager:
    """The process's plugin manager for ``config``, honouring ``[plugins] block`` (built once per
    process; see :func:`manager_for_blocks`)."""
    return manager_for_blocks(config.blocked_plugins)
