"""Loading and validating the TOML configuration (reference: docs/configuration.md)."""

from __future__ import annotations

import difflib
import os
import re
import socket
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..structures import MisfirePolicy
from .numbers import DAY, YEAR, integer, number

ENV_VAR = "TICKWORK_CONFIG"
DEFAULT_FILE = "tickwork.toml"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def default_node_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


#: The longest ``end_batch_window``: an end that waits longer holds its schedule visibly running.
MAX_END_BATCH_WINDOW = 1.0
#: The longest ``start_batch_window``: the most a fire claimed ahead may start after its time.
MAX_START_BATCH_WINDOW = 1.0
#: The longest ``[scheduler] lookahead``, in seconds.
MAX_LOOKAHEAD = 60.0


@dataclass(frozen=True)
class SchedulerConfig:
    """The ``[scheduler]`` table."""

    jobs: tuple[str, ...] = ()
    node_id: str = field(default_factory=default_node_id)
    max_sleep: float = 60.0
    misfire: MisfirePolicy = MisfirePolicy.SKIP
    misfire_grace: float = 30.0
    hard_timeout_grace: float = 60.0
    reap_interval: float = 15.0
    renew_interval: float = 10.0
    max_in_flight: int = 1000
    history_retention_days: float = 30.0
    default_executor: str = "local"
    lookahead: float = 1.0
    shutdown_grace: float = 30.0
    end_batch_window: float = 0.1
    start_batch_window: float = 0.015
    steal_after: float = 0.25


#: The range of every numeric ``[scheduler]`` key: (low, high, low excluded), in seconds (days
#: for ``history_retention_days``, where 0 keeps the history forever).
_SCHEDULER_RANGES: dict[str, tuple[float, float, bool]] = {
    "max_sleep": (0.0, DAY, True),
    "misfire_grace": (0.0, YEAR, True),
    "hard_timeout_grace": (1.0, YEAR, False),
    "reap_interval": (0.1, DAY, False),
    "renew_interval": (0.1, DAY, False),
    "history_retention_days": (0.0, 36500.0, False),
    "lookahead": (0.0, MAX_LOOKAHEAD, False),
    "shutdown_grace": (0.0, DAY, False),
    "end_batch_window": (0.0, MAX_END_BATCH_WINDOW, False),
    "start_batch_window": (0.0, MAX_START_BATCH_WINDOW, False),
    "steal_after": (0.0, YEAR, True),
}
MAX_IN_FLIGHT = 1_000_000

_SCHEDULER_TYPES: dict[str, type | tuple[type, ...]] = {
    "jobs": list,
    "node_id": str,
    "max_sleep": (int, float),
    "misfire": str,
    "misfire_grace": (int, float),
    "hard_timeout_grace": (int, float),
    "reap_interval": (int, float),
    "renew_interval": (int, float),
    "max_in_flight": int,
    "history_retention_days": (int, float),
    "default_executor": str,
    "lookahead": (int, float),
    "shutdown_grace": (int, float),
    "end_batch_window": (int, float),
    "start_batch_window": (int, float),
    "steal_after": (int, float),
}

LOG_FORMATS = ("text", "json")


@dataclass(frozen=True)
class MetricsConfig:
    """The ``[metrics]`` table: where the metrics plugin serves ``/metrics`` and ``/healthz``."""

    port: int = 9464
    host: str = "127.0.0.1"


@dataclass(frozen=True)
class LoggingConfig:
    """The ``[logging]`` table; applied by ``tickwork run``, never by an embedded node."""

    format: str = "text"


@dataclass(frozen=True)
class PluginChoice:
    """A ``[store]`` or ``[membership]`` table: which plugin, with which options."""

    plugin: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Config:
    """The whole configuration; ``source`` is the file it came from (``None`` for defaults)."""

    source: Path | None = None
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    store: PluginChoice = field(default_factory=lambda: PluginChoice("sqlite", {"path": "tickwork.db"}))
    membership: PluginChoice = field(default_factory=lambda: PluginChoice("single"))
    executors: dict[str, dict[str, Any]] = field(default_factory=dict)
    blocked_plugins: tuple[str, ...] = ()
    #: ``None`` when there is no ``[metrics]`` table (no metrics server)
    metrics: MetricsConfig | None = None
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    #: The ``[web]`` table (dashboard: ``host``, ``port``, ``token_env``), checked by :data:`WEB_KEYS`.
    web: dict[str, Any] = field(default_factory=dict)

    def where(self, key: str) -> str:
        return f"{self.source or '<defaults>'}: {key}"


#: Keys of the ``[web]`` table (docs/web.md); the dashboard plugin reads them.
WEB_KEYS: dict[str, type | tuple[type, ...]] = {"host": str, "port": int, "token_env": str}


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


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """`` (did you mean `max_sleep`?)`` for a near miss among ``known``; empty when none is close."""
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


def _check_type(where: str, value: Any, expected: type | tuple[type, ...]) -> None:
    kinds = expected if isinstance(expected, tuple) else (expected,)
    # bool is an int in Python but never a valid number or count in a config file.
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise ConfigError(f"{where}: expected {names}, got {type(value).__name__} {value!r}")


def expand_env(where: str, value: Any) -> Any:
    """Replace ``${NAME}`` in strings (recursively) with environment variables."""
    if isinstance(value, str):

        def sub(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in os.environ:
                raise ConfigError(f"{where}: environment variable {name} is not set")
            return os.environ[name]

        return _ENV_REF.sub(sub, value)
    if isinstance(value, list):
        return [expand_env(where, v) for v in value]
    if isinstance(value, dict):
        return {k: expand_env(f"{where}.{k}", v) for k, v in value.items()}
    return value


def validate_options(
    where: str, options: dict[str, Any], allowed: dict[str, type | tuple[type, ...]]
) -> dict[str, Any]:
    """Check ``options`` against a plugin's declared ``options``; expand ``${ENV}`` references."""
    for key, value in options.items():
        if key not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            raise ConfigError(f"{where}.{key}: unknown option{did_you_mean(key, allowed)}; known options: {known}")
        _check_type(f"{where}.{key}", value, allowed[key])
    return {k: expand_env(f"{where}.{k}", v) for k, v in options.items()}


def _table(source: str, data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: [{key}] must be a table")
    return value


def parse(data: dict[str, Any], source: Path | None = None) -> Config:
    """Build a :class:`Config` from parsed TOML, checking every key and type."""
    src = str(source) if source else "<config>"
    known_tables = {"scheduler", "store", "membership", "executor", "plugins", "web", "metrics", "logging"}
    for key in data:
        if key not in known_tables:
            raise ConfigError(
                f"{src}: unknown table or key {key!r}{did_you_mean(key, known_tables)}; "
                f"known: {', '.join(sorted(known_tables))}"
            )

    sched_raw = _table(src, data, "scheduler")
    sched_kwargs: dict[str, Any] = {}
    for key, value in sched_raw.items():
        if key not in _SCHEDULER_TYPES:
            raise ConfigError(
                f"{src}: scheduler.{key}: unknown key{did_you_mean(key, _SCHEDULER_TYPES)}; "
                f"known keys: {', '.join(sorted(_SCHEDULER_TYPES))}"
            )
        _check_type(f"{src}: scheduler.{key}", value, _SCHEDULER_TYPES[key])
        sched_kwargs[key] = expand_env(f"{src}: scheduler.{key}", value)
    if "jobs" in sched_kwargs:
        jobs = sched_kwargs["jobs"]
        if not all(isinstance(j, str) and j for j in jobs):
            raise ConfigError(f"{src}: scheduler.jobs: must be a list of module names")
        sched_kwargs["jobs"] = tuple(jobs)
    if "misfire" in sched_kwargs:
        try:
            sched_kwargs["misfire"] = MisfirePolicy(sched_kwargs["misfire"])
        except ValueError:
            allowed = ", ".join(p.value for p in MisfirePolicy)
            raise ConfigError(
                f"{src}: scheduler.misfire: {sched_kwargs['misfire']!r} is not one of {allowed}"
            ) from None
    for key, value in list(sched_kwargs.items()):
        if key in _SCHEDULER_RANGES:
            low, high, low_open = _SCHEDULER_RANGES[key]
            sched_kwargs[key] = number(f"{src}: scheduler.{key}", value, low=low, high=high, low_open=low_open)
    if "max_in_flight" in sched_kwargs:
        integer(f"{src}: scheduler.max_in_flight", sched_kwargs["max_in_flight"], low=1, high=MAX_IN_FLIGHT)
    if "node_id" in sched_kwargs and not sched_kwargs["node_id"].strip():
        raise ConfigError(f"{src}: scheduler.node_id: must not be empty")

    def choice(table: str, default_plugin: str, default_options: dict[str, Any]) -> PluginChoice:
        raw = dict(_table(src, data, table))
        if not raw:
            return PluginChoice(default_plugin, default_options)
        plugin = raw.pop("plugin", default_plugin)
        if not isinstance(plugin, str):
            raise ConfigError(f"{src}: {table}.plugin: expected str, got {type(plugin).__name__}")
        return PluginChoice(plugin, raw if raw or plugin != default_plugin else default_options)

    store = choice("store", "sqlite", {"path": "tickwork.db"})
    membership = choice("membership", "single", {})

    executors: dict[str, dict[str, Any]] = {}
    for name, table in _table(src, data, "executor").items():
        if not isinstance(table, dict):
            raise ConfigError(f"{src}: executor.{name}: must be a table ([executor.{name}])")
        executors[name] = dict(table)

    plugins_raw = _table(src, data, "plugins")
    for key in plugins_raw:
        if key != "block":
            raise ConfigError(f"{src}: plugins.{key}: unknown key{did_you_mean(key, ['block'])}; known keys: block")
    block = plugins_raw.get("block", [])
    if not isinstance(block, list) or not all(isinstance(b, str) for b in block):
        raise ConfigError(f"{src}: plugins.block: must be a list of plugin names")

    web = validate_options(f"{src}: web", dict(_table(src, data, "web")), WEB_KEYS)

    return Config(
        source=source,
        metrics=_metrics(src, data),
        logging=_logging(src, data),
        scheduler=SchedulerConfig(**sched_kwargs),
        store=store,
        membership=membership,
        executors=executors,
        blocked_plugins=tuple(block),
        web=web,
    )


def _metrics(src: str, data: dict[str, Any]) -> MetricsConfig | None:
    if "metrics" not in data:
        return None
    raw = validate_options(f"{src}: metrics", _table(src, data, "metrics"), {"port": int, "host": str})
    port = raw.get("port", MetricsConfig.port)
    if not 0 <= port <= 65535:
        raise ConfigError(f"{src}: metrics.port: must be between 0 and 65535 (0: any free port), got {port}")
    return MetricsConfig(port=port, host=raw.get("host", MetricsConfig.host))


def _logging(src: str, data: dict[str, Any]) -> LoggingConfig:
    raw = validate_options(f"{src}: logging", _table(src, data, "logging"), {"format": str})
    fmt = raw.get("format", "text")
    if fmt not in LOG_FORMATS:
        raise ConfigError(f"{src}: logging.format: {fmt!r} is not one of {', '.join(LOG_FORMATS)}")
    return LoggingConfig(format=fmt)


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
    source: str | os.PathLike[str] | Mapping[str, Any] | None = None, overrides: Mapping[str, Any] | None = None
) -> Config:
    """A :class:`Config` from a file (found as the CLI finds it when ``source`` is ``None``) or
    from a dict shaped like the TOML, with ``overrides`` applied: a key naming a table
    (``store``, ``membership``, ``metrics``, ...) whose value is a dict updates that table (or
    replaces it when it names another ``plugin``); any other key is a ``[scheduler]`` key
    (``node_id="web-1"``, ``jobs=["myapp.jobs"]``)."""
    path: Path | None = None
    if isinstance(source, Mapping):
        data: dict[str, Any] = {k: dict(v) if isinstance(v, Mapping) else v for k, v in source.items()}
    else:
        path = find_config_file(source)
        data = read_toml(path) if path is not None else {}
    for key, value in (overrides or {}).items():
        if key in TABLES and isinstance(value, Mapping):
            table = data.setdefault(key, {})
            if not isinstance(table, dict):
                raise ConfigError(f"{path or '<config>'}: [{key}] must be a table")
            if "plugin" in value and value["plugin"] != table.get("plugin"):
                table.clear()  # another plugin: the file's options were for the one it replaces
            table.update(value)
        else:
            scheduler = data.setdefault("scheduler", {})
            if not isinstance(scheduler, dict):
                raise ConfigError(f"{path or '<config>'}: [scheduler] must be a table")
            scheduler[key] = list(value) if isinstance(value, tuple) else value
    return parse(data, path)


#: Top-level tables an override may update (see :func:`config_from`).
TABLES = ("scheduler", "store", "membership", "executor", "plugins", "metrics", "logging")
