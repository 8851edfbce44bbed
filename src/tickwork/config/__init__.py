"""The configuration: finding and reading ``tickwork.toml`` and checking every key
(reference: docs/configuration.md).

Every key is declared once (:mod:`~tickwork.config.declarations`): the core's tables in
:mod:`~tickwork.config.tables`, the plugins' through the ``tickwork_add_config`` hook.
"""

from __future__ import annotations

from .checks import did_you_mean, expand_env
from .declarations import (
    Choice,
    ChoiceTable,
    EnumChoice,
    Integer,
    NamedTables,
    Number,
    OptionalText,
    PluginChoice,
    Port,
    Section,
    Setting,
    Strings,
    Text,
)
from .files import (
    DEFAULT_FILE,
    ENV_VAR,
    Config,
    check_tables,
    config_from,
    data_line,
    find_config_file,
    load,
    parse,
    parse_core,
    parse_plugin_tables,
    read_toml,
    validate_options,
)
from .tables import (
    CORE_TABLES,
    LOG_FORMATS,
    ConfigTables,
    HealthConfig,
    LoggingConfig,
    PluginsConfig,
    SchedulerConfig,
    declared_tables,
    default_node_id,
)

__all__ = [
    "CORE_TABLES",
    "DEFAULT_FILE",
    "ENV_VAR",
    "LOG_FORMATS",
    "Choice",
    "ChoiceTable",
    "Config",
    "ConfigTables",
    "EnumChoice",
    "HealthConfig",
    "Integer",
    "LoggingConfig",
    "NamedTables",
    "Number",
    "OptionalText",
    "PluginChoice",
    "PluginsConfig",
    "Port",
    "SchedulerConfig",
    "Section",
    "Setting",
    "Strings",
    "Text",
    "check_tables",
    "config_from",
    "data_line",
    "declared_tables",
    "default_node_id",
    "did_you_mean",
    "expand_env",
    "find_config_file",
    "load",
    "parse",
    "parse_core",
    "parse_plugin_tables",
    "read_toml",
    "validate_options",
]
