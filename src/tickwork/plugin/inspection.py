"""What ``tickwork config check`` and ``tickwork config show`` report: every problem of a
configuration file, found without starting or connecting to anything, and the effective value
of every key of every table (the plugins' included) with where it came from.

Both read the file as every command does (:func:`~tickwork.config.files.parse_all`: each table
checked against its declaration, each plugin's options against the Section its class declares),
with the plugins its ``[plugins] block`` leaves loaded.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config.declarations import Section, Setting
from ..config.files import ENV_VAR, Config, find_config_file, parse_all, plugin_options, read_toml
from ..config.tables import CORE_TABLES, MEMBERSHIP, STORE, PluginsConfig
from ..errors import ConfigError, ConfigProblems, PluginNotFoundError
from .manager import PluginManager, manager_for_blocks
from .registry import Registry

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class CheckReport:
    """:param source: the file checked (``None``: no file, the defaults)
    :param problems: every problem, each naming ``FILE: TABLE.KEY``"""

    source: Path | None
    problems: list[str]

    @property
    def valid(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        return {"file": str(self.source) if self.source else None, "valid": self.valid, "problems": self.problems}


def _read(explicit: str | os.PathLike[str] | None) -> tuple[Path | None, dict[str, Any]]:
    path = find_config_file(explicit)
    return path, (read_toml(path) if path is not None else {})


def _manager(data: Mapping[str, Any], source: str) -> PluginManager:
    """The plugins the file's ``[plugins] block`` leaves loaded (all of them when it is wrong:
    its own problem is reported with the others)."""
    raw = data.get("plugins", {})
    try:
        block = PluginsConfig.from_toml(source, raw if isinstance(raw, dict) else {}).block
    except ConfigError:
        block = ()
    return manager_for_blocks(block)


def _registries(manager: PluginManager) -> dict[str, Registry[Any]]:
    """The registries of the plugins that have option tables, by kind."""
    return {"store": manager.stores, "membership": manager.memberships, "executor": manager.executors}


def check_file(explicit: str | os.PathLike[str] | None = None) -> CheckReport:
    """Every problem of the configuration found as the CLI finds it: each table and key, each
    plugin's options, and plugin names nobody registered. Builds no plugin, opens no database.

    :raises ConfigError: when there is no file to read (``--config`` names none) or it is no TOML
    """
    path, data = _read(explicit)
    source = str(path) if path else "<config>"
    manager = _manager(data, source)
    config, problems = parse_all(data, path, tables=manager.config_tables)
    registries = _registries(manager)
    for kind, name, table, _options in plugin_options(config):
        registry = registries[kind]
        if name not in registry:
            where = f"{source}: {table}.plugin" if kind != "executor" else f"{source}: {table}"
            problems.found.append(str(PluginNotFoundError(kind, name, registry.names(), where=where)))
    return CheckReport(path, problems.found)


# -- config show ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShownKey:
    """One key of the effective configuration.

    :param source: ``file`` (written in the file), ``environment`` (written in the file with
        ``${NAME}`` references, expanded from ``env``) or ``default``
    """

    key: str
    value: Any
    default: Any
    source: str
    env: tuple[str, ...] = ()

    def as_json(self, file: Path | None) -> dict[str, Any]:
        found: dict[str, Any] = {"value": self.value, "default": self.default, "source": self.source}
        if self.source != "default" and file is not None:
            found["file"] = str(file)
        if self.env:
            found["env"] = list(self.env)
        return found


def _plain(value: Any) -> Any:
    """A value as JSON holds it (tuples as lists, enum members as their values)."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _references(raw: Any) -> tuple[str, ...]:
    """The environment variables ``${NAME}`` references in a value as written name."""
    if isinstance(raw, str):
        return tuple(_ENV_REF.findall(raw))
    if isinstance(raw, list):
        return tuple(name for item in raw for name in _references(item))
    if isinstance(raw, Mapping):
        return tuple(name for item in raw.values() for name in _references(item))
    return ()


def _shown(setting: Setting[Any], key: str, value: Any, raw: Mapping[str, Any]) -> ShownKey:
    default = None if setting.required else _plain(setting.shown(setting.default))
    shown = _plain(setting.shown(value))
    if key not in raw:
        return ShownKey(key, shown, default, "default")
    env = _references(raw[key])
    return ShownKey(key, shown, default, "environment" if env else "file", env)


def _section_keys(values: Section, raw: Mapping[str, Any]) -> list[ShownKey]:
    return [_shown(setting, key, values[key], raw) for key, setting in type(values).settings().items()]


def _raw_table(data: Mapping[str, Any], *path: str) -> Mapping[str, Any]:
    found: Any = data
    for part in path:
        found = found.get(part, {}) if isinstance(found, Mapping) else {}
    return found if isinstance(found, Mapping) else {}


def effective(explicit: str | os.PathLike[str] | None = None) -> tuple[Config, dict[str, list[ShownKey]]]:
    """The effective configuration: every table (the core's, the store's, the membership's,
    each executor's and every loaded plugin's table) and every key, with its value (secrets
    masked), its default and its source.

    :raises ConfigError: every problem of the file, as :func:`check_file` finds them
    """
    report = check_file(explicit)
    path, data = _read(explicit)
    source = str(path) if path else "<config>"
    if not report.valid:
        if len(report.problems) == 1:
            raise ConfigError(report.problems[0])
        raise ConfigProblems(f"{source}: {len(report.problems)} problems", report.problems)
    manager = _manager(data, source)
    config, _ = parse_all(data, path, tables=manager.config_tables)
    tables: dict[str, list[ShownKey]] = {}
    for name in CORE_TABLES:
        declared = CORE_TABLES[name]
        if isinstance(declared, type) and issubclass(declared, Section):
            values = {
                "scheduler": config.scheduler,
                "logging": config.logging,
                "health": config.health,
                "plugins": PluginsConfig(block=config.blocked_plugins),
            }[name]
            tables[name] = _section_keys(values, _raw_table(data, name))
    registries = _registries(manager)
    choices = {"store": STORE, "membership": MEMBERSHIP}
    for kind, plugin, table, options in plugin_options(config):
        section = registries[kind].get(plugin).section
        values = section.from_toml(source, options, noun="option", table=table)
        raw = _raw_table(data, *table.split("."))
        keys = _section_keys(values, raw)
        if kind in choices:
            keys.insert(0, _shown(choices[kind].plugin, "plugin", plugin, raw))
        tables[table] = keys
    for name, calendar in config.calendars.items():
        tables[f"calendars.{name}"] = _section_keys(calendar, _raw_table(data, "calendars", name))
    for name, section in manager.config_tables.plugin_tables.items():
        tables[name] = _section_keys(config.table(section), _raw_table(data, name))
    return config, tables


def found_through(path: Path | None, explicit: str | os.PathLike[str] | None) -> str:
    """How the file was found (``--config``, ``$TICKWORK_CONFIG``, the working directory)."""
    if path is None:
        return "no configuration file: the defaults"
    if explicit:
        return f"{path} (--config)"
    if os.environ.get(ENV_VAR):
        return f"{path} (${ENV_VAR})"
    return f"{path} (the working directory's)"
