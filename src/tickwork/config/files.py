"""Loading and validating the TOML configuration (reference: docs/configuration.md).

Parsing is in two steps, because ``[plugins] block`` decides which plugins load and so which
tables they declare: first the core's tables (:data:`~tickwork.config.tables.CORE_TABLES`), then,
with the tables the loaded plugins declare (:class:`~tickwork.config.tables.ConfigTables`), the
rest. A table nobody declares is an error naming the known ones.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from ..errors import ConfigError, ConfigProblems
from .checks import did_you_mean
from .declarations import PluginChoice, Section
from .tables import (
    CALENDARS,
    CORE_TABLES,
    EXECUTOR,
    MEMBERSHIP,
    NAMESPACES,
    STORE,
    CalendarConfig,
    ConfigTables,
    HealthConfig,
    LoggingConfig,
    NamespaceConfig,
    PluginsConfig,
    SchedulerConfig,
    declared_tables,
)

ENV_VAR = "TICKWORK_CONFIG"
DEFAULT_FILE = "tickwork.toml"

S = TypeVar("S", bound=Section)
T = TypeVar("T")


@dataclass(frozen=True)
class Config:
    """The whole configuration; ``source`` is the file it came from (``None`` for defaults)."""

    source: Path | None = None
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    store: PluginChoice = field(default_factory=STORE.default)
    membership: PluginChoice = field(default_factory=MEMBERSHIP.default)
    executors: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The ``[calendars.NAME]`` tables by name (docs/holidays.md).
    calendars: Mapping[str, CalendarConfig] = field(default_factory=dict)
    #: The ``[namespaces.NAME]`` tables by name (docs/teams.md#limits).
    namespaces: Mapping[str, NamespaceConfig] = field(default_factory=dict)
    blocked_plugins: tuple[str, ...] = ()
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    health: HealthConfig = field(default_factory=HealthConfig)
    #: The tables declared by plugins (``tickwork_add_config``) that the file has, checked, by
    #: name; a plugin reads its own with :meth:`table` or :meth:`find_table`.
    plugin_tables: Mapping[str, Section] = field(default_factory=dict)

    def where(self, key: str) -> str:
        return f"{self.source or '<defaults>'}: {key}"

    def find_table(self, section: type[S]) -> S | None:
        """The plugin table ``[section.table]`` as the file gives it; ``None`` when it has none."""
        found = self.plugin_tables.get(section.table)
        if found is None:
            return None
        if not isinstance(found, section):
            raise TypeError(f"[{section.table}] was read as {type(found).__name__}, not {section.__name__}")
        return found

    def table(self, section: type[S]) -> S:
        """The plugin table ``[section.table]``; its defaults when the file has none."""
        found = self.find_table(section)
        return section() if found is None else found


def find_config_file(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """``--config FILE``, else ``$TICKWORK_CONFIG``, else ``./tickwork.toml``, else ``None``."""
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(f"config file {str(path)!r} (--config) does not exist or is not a file")
        return path
    env = os.environ.get(ENV_VAR)
    if env:
        path = Path(env)
        if not path.is_file():
            raise ConfigError(f"${ENV_VAR} names {env!r}, which does not exist or is not a file")
        return path
    local = Path(DEFAULT_FILE)
    return local if local.is_file() else None


def _table(source: str, data: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: [{key}] must be a table")
    return value


def parse(data: Mapping[str, Any], source: Path | None = None, *, tables: ConfigTables | None = None) -> Config:
    """Build a :class:`Config` from parsed TOML, checking every table, key and type: the core's,
    the plugins' tables and the options of the store, the membership and each executor.

    :param tables: the tables and plugin options the plugins declare; by default those of the
        plugins this configuration's ``[plugins] block`` leaves loaded
        (:func:`~tickwork.config.tables.declared_tables`)
    :raises ConfigError: the one problem, or :class:`~tickwork.errors.ConfigProblems` listing
        every problem of every table when there are several
    """
    config, problems = parse_all(data, source, tables=tables)
    problems.raise_any(str(source) if source else "<config>")
    return config


def parse_all(
    data: Mapping[str, Any], source: Path | None = None, *, tables: ConfigTables | None = None
) -> tuple[Config, Problems]:
    """:func:`parse` without raising: the configuration as far as it is valid (a table with a
    problem has its defaults) and every problem found (``tickwork config check``)."""
    src = str(source) if source else "<config>"
    problems = Problems()
    core = problems.collect(partial(parse_core, data, source), None)
    if core is None:
        # Which plugins load depends on [plugins]: read it alone to check the rest anyway.
        block: tuple[str, ...] = problems.collect(
            lambda: PluginsConfig.from_toml(src, _table(src, data, "plugins")).block, ()
        )
        core = _lenient_core(data, source, block)
    if tables is None:
        tables = declared_tables(core.blocked_plugins)
    config = problems.collect(partial(parse_plugin_tables, data, core, tables), core)
    problems.collect(partial(check_plugin_options, config, tables), None)
    return config, problems


def _lenient_core(data: Mapping[str, Any], source: Path | None, block: tuple[str, ...]) -> Config:
    """The plugins a configuration with problems names (for their options to be checked too)."""
    src = str(source) if source else "<config>"
    ignored = Problems()
    default = SchedulerConfig.default_executor.default
    scheduler = data.get("scheduler", {})
    named = scheduler.get("default_executor", default) if isinstance(scheduler, dict) else default
    return Config(
        source=source,
        scheduler=SchedulerConfig(default_executor=named if isinstance(named, str) else default),
        store=ignored.collect(lambda: STORE.from_toml(src, _table(src, data, "store")), STORE.default()),
        membership=ignored.collect(
            lambda: MEMBERSHIP.from_toml(src, _table(src, data, "membership")), MEMBERSHIP.default()
        ),
        executors=ignored.collect(lambda: EXECUTOR.from_toml(src, _table(src, data, "executor")), {}),
        blocked_plugins=block,
    )


class Problems:
    """The configuration errors met while reading every table of a file, so that one reading
    names them all (a :class:`~tickwork.errors.ConfigProblems` lists each)."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def collect(self, step: Callable[[], T], otherwise: T) -> T:
        """``step()``, or ``otherwise`` when it raises a ConfigError (whose problems are kept)."""
        try:
            return step()
        except ConfigProblems as exc:
            self.found += exc.problems
        except ConfigError as exc:
            self.found.append(str(exc))
        return otherwise

    def raise_any(self, source: str) -> None:
        """:raises ConfigError: the one problem found; ConfigProblems when there are several"""
        if len(self.found) == 1:
            raise ConfigError(self.found[0])
        if self.found:
            raise ConfigProblems(f"{source}: {len(self.found)} problems", self.found)


def parse_core(data: Mapping[str, Any], source: Path | None = None) -> Config:
    """Step 1: the core's tables (what decides which plugins load); the others are left to
    :func:`parse_plugin_tables`.

    :raises ConfigError: every problem of every core table (:class:`Problems`)
    """
    src = str(source) if source else "<config>"
    problems = Problems()

    def read(section: type[S], key: str) -> S:
        return problems.collect(lambda: section.from_toml(src, _table(src, data, key)), section())

    config = Config(
        source=source,
        scheduler=read(SchedulerConfig, "scheduler"),
        store=problems.collect(lambda: STORE.from_toml(src, _table(src, data, "store")), STORE.default()),
        membership=problems.collect(
            lambda: MEMBERSHIP.from_toml(src, _table(src, data, "membership")), MEMBERSHIP.default()
        ),
        executors=problems.collect(lambda: EXECUTOR.from_toml(src, _table(src, data, "executor")), {}),
        calendars=problems.collect(lambda: CALENDARS.from_toml(src, _table(src, data, "calendars")), {}),
        namespaces=problems.collect(lambda: NAMESPACES.from_toml(src, _table(src, data, "namespaces")), {}),
        blocked_plugins=read(PluginsConfig, "plugins").block,
        logging=read(LoggingConfig, "logging"),
        health=read(HealthConfig, "health"),
    )
    problems.raise_any(src)
    return config


def parse_plugin_tables(data: Mapping[str, Any], config: Config, tables: ConfigTables) -> Config:
    """Step 2: ``config`` (from :func:`parse_core`) with the tables of ``data`` that plugins
    declare in ``tables``; any other table is an error naming the known ones. An unknown key of a
    plugin's table is an unknown *option*, as in its ``[store]`` or ``[executor.NAME]`` table."""
    src = str(config.source) if config.source else "<config>"
    declared = tables.plugin_tables
    values: dict[str, Section] = {}
    problems = Problems()

    def read(section: type[Section], key: str) -> Section:
        return section.from_toml(src, _table(src, data, key), noun="option")

    for key in data:
        if key in CORE_TABLES:
            continue
        section = declared.get(key)
        if section is None:
            problems.found.append(str(_unknown_table(src, key, tables, config.blocked_plugins)))
            continue
        found = problems.collect(partial(read, section, key), None)
        if found is not None:
            values[key] = found
    problems.raise_any(src)
    return replace(config, plugin_tables=values) if values else config


def plugin_options(config: Config) -> list[tuple[str, str, str, dict[str, Any]]]:
    """The plugin option tables of ``config``: (kind, plugin name, table, raw options) for the
    store, the membership and every executor (the default one too, without a table)."""
    found = [
        ("store", config.store.plugin, "store", dict(config.store.options)),
        ("membership", config.membership.plugin, "membership", dict(config.membership.options)),
    ]
    executors = dict(config.executors)
    executors.setdefault(config.scheduler.default_executor, {})
    found += [("executor", name, f"executor.{name}", dict(options)) for name, options in executors.items()]
    return found


def check_plugin_options(config: Config, tables: ConfigTables) -> None:
    """Check the options of the store, the membership and each executor against the Section
    their plugin declares (:attr:`tickwork.abc.Store.section`), as the plugins are built with
    (:mod:`tickwork.plugin.assembly`). A plugin name nobody registered is left to the build,
    which names the registered ones.

    :raises ConfigError: every problem (:class:`Problems`)
    """
    src = str(config.source) if config.source else "<config>"
    problems = Problems()
    for kind, name, table, options in plugin_options(config):
        section = tables.options(kind, name)
        if section is not None:
            problems.collect(partial(section.from_toml, src, options, noun="option", table=table), None)
    problems.raise_any(src)


def _unknown_table(src: str, key: str, tables: ConfigTables, blocked: tuple[str, ...]) -> ConfigError:
    if key in blocked:
        return ConfigError(
            f"{src}: {key}: the {key} plugin is not loaded ([plugins] block lists it): remove the [{key}] table, "
            f"or {key!r} from the block"
        )
    known = tables.names()
    hint = f"; the tables of blocked plugins ({', '.join(blocked)}) are unknown" if blocked else ""
    return ConfigError(
        f"{src}: unknown table or key {key!r}{did_you_mean(key, known)}; known: {', '.join(sorted(known))}{hint}"
    )


def check_tables(config: Config, tables: ConfigTables) -> None:
    """:raises ConfigError: if ``config`` has a plugin table that none of the plugins declaring
    ``tables`` declares (a configuration read for other plugins than a node runs with)."""
    for name in config.plugin_tables:
        if name not in tables.plugin_tables:
            raise ConfigError(
                f"{config.where(name)}: no loaded plugin declares the [{name}] table"
                + (f" ([plugins] block lists {name!r})" if name in config.blocked_plugins else "")
            )


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML config file; errors name the file."""
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        line = data_line(path, exc.start)
        raise ConfigError(
            f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} on line {line}); TOML files must be UTF-8"
        ) from exc
    except OSError as exc:
        raise ConfigError(f"cannot read config file {str(path)!r}: {exc}") from exc


def load(explicit: str | os.PathLike[str] | None = None) -> Config:
    """Find and load the configuration (see :func:`find_config_file`); defaults if there is none."""
    path = find_config_file(explicit)
    if path is None:
        return Config()
    return parse(read_toml(path), path)


def data_line(path: Path, offset: int) -> int:
    """The 1-based line of byte ``offset`` in ``path``."""
    try:
        return path.read_bytes()[:offset].count(b"\n") + 1
    except OSError:
        return 0


def config_from(
    source: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    tables: ConfigTables | None = None,
) -> Config:
    """A :class:`Config` from a file (found as the CLI finds it when ``source`` is ``None``) or
    from a dict shaped like the TOML, with ``overrides`` applied: a ``[scheduler]`` key
    (``node_id="web-1"``, ``jobs=["myapp.jobs"]``), or a table given as a dict (``store``,
    ``membership``, ``logging``, any table a plugin declares such as ``metrics`` or ``web``), which
    updates the file's table (or replaces it when it names another ``plugin``). An unknown name is
    refused as in a file, with the closest known one.

    :param tables: as for :func:`parse`
    """
    path: Path | None = None
    if isinstance(source, Mapping):
        data: dict[str, Any] = {k: dict(v) if isinstance(v, Mapping) else v for k, v in source.items()}
    else:
        path = find_config_file(source)
        data = read_toml(path) if path is not None else {}
    where = str(path or "<config>")
    knobs = SchedulerConfig.settings()
    for key, value in (overrides or {}).items():
        if key not in knobs and isinstance(value, Mapping):
            table = data.setdefault(key, {})
            if not isinstance(table, dict):
                raise ConfigError(f"{where}: [{key}] must be a table")
            if "plugin" in value and value["plugin"] != table.get("plugin"):
                table.clear()  # another plugin: the file's options were for the one it replaces
            table.update(value)
            continue
        if key not in knobs and _names_a_table(key, data, overrides, tables):
            raise ConfigError(
                f"{where}: {key}: the [{key}] table is given as a dict, got {type(value).__name__} {value!r}"
            )
        scheduler = data.setdefault("scheduler", {})
        if not isinstance(scheduler, dict):
            raise ConfigError(f"{where}: [scheduler] must be a table")
        # Anything else is a [scheduler] key: an unknown one is refused by name, with the closest.
        scheduler[key] = list(value) if isinstance(value, tuple) else value
    return parse(data, path, tables=tables)


def _names_a_table(
    key: str, data: Mapping[str, Any], overrides: Mapping[str, Any] | None, tables: ConfigTables | None
) -> bool:
    if key in CORE_TABLES:
        return True
    if tables is None:
        block = (overrides or {}).get("plugins", data.get("plugins", {}))
        blocked = block.get("block", ()) if isinstance(block, Mapping) else ()
        tables = declared_tables(blocked if isinstance(blocked, list | tuple) else ())
    return key in tables
