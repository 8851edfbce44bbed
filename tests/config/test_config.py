"""The TOML configuration: discovery, defaults, validation, ``${ENV}`` and ``[plugins] block``."""

from __future__ import annotations

import re
import textwrap
import tomllib
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tickwork.config import (
    Config,
    LoggingConfig,
    PluginsConfig,
    SchedulerConfig,
    find_config_file,
    load,
    parse,
)
from tickwork.config.reference import COMMAND, marked_tables, render, stale
from tickwork.errors import ConfigError, PluginNotFoundError
from tickwork.node import build_executors, build_membership, build_store
from tickwork.plugin.manager import plugin_manager_for
from tickwork.structures import MisfirePolicy
from tickwork_http.executor import HTTPExecutor
from tickwork_local.executor import LocalExecutor
from tickwork_membership.hashring import HashRingMembership
from tickwork_membership.single import SingleMembership
from tickwork_metrics.settings import MetricsConfig
from tickwork_postgres.store import PostgresStore
from tickwork_sqlite.store import SQLiteStore

DOC = REPO / "docs" / "configuration.md"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run every test in an empty directory with no $TICKWORK_CONFIG."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TICKWORK_CONFIG", raising=False)
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load_text(tmp_path: Path, text: str) -> Config:
    return load(write(tmp_path / "t.toml", text))


# -- discovery -------------------------------------------------------------------------------------


def test_no_file_anywhere_gives_the_defaults() -> None:
    assert find_config_file() is None
    config = load()
    assert config.source is None
    assert config.store.plugin == "sqlite"
    assert config.store.options == {}  # the sqlite store's declared default path applies
    assert config.membership.plugin == "single"
    assert config.scheduler.default_executor == "local"
    assert config.scheduler.jobs == ()
    assert config.executors == {}
    assert config.blocked_plugins == ()


def test_defaults_build_a_sqlite_store_in_the_working_directory_a_single_node_and_a_local_executor(
    tmp_path: Path,
) -> None:
    config = load()
    manager = plugin_manager_for(config)
    store = build_store(config, manager)
    assert isinstance(store, SQLiteStore)
    assert (Path.cwd() / store.path).resolve() == (tmp_path / "tickwork.db").resolve()
    assert store.create_empty is True
    assert isinstance(build_membership(config, manager), SingleMembership)
    executors = build_executors(config, manager)
    assert list(executors) == ["local"]
    assert isinstance(executors["local"], LocalExecutor)


def test_local_tickwork_toml_is_found(tmp_path: Path) -> None:
    write(tmp_path / "tickwork.toml", '[store]\npath = "local.db"\n')
    assert find_config_file() == Path("tickwork.toml")
    assert load().store.options == {"path": "local.db"}


def test_environment_variable_beats_the_local_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "tickwork.toml", '[store]\npath = "local.db"\n')
    env_file = write(tmp_path / "env.toml", '[store]\npath = "env.db"\n')
    monkeypatch.setenv("TICKWORK_CONFIG", str(env_file))
    assert load().store.options == {"path": "env.db"}


def test_explicit_file_beats_the_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_file = write(tmp_path / "env.toml", '[store]\npath = "env.db"\n')
    explicit = write(tmp_path / "explicit.toml", '[store]\npath = "explicit.db"\n')
    monkeypatch.setenv("TICKWORK_CONFIG", str(env_file))
    config = load(explicit)
    assert config.store.options == {"path": "explicit.db"}
    assert config.source == explicit


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml.*does not exist"):
        load(tmp_path / "nope.toml")


def test_environment_variable_naming_a_missing_file_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TICKWORK_CONFIG", "/nonexistent/tickwork.toml")
    with pytest.raises(ConfigError, match=r"\$TICKWORK_CONFIG names '/nonexistent/tickwork.toml'"):
        load()


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"t\.toml: invalid TOML"):
        load_text(tmp_path, "[store\npath = 1\n")


# -- tables and keys -------------------------------------------------------------------------------


def test_scheduler_table_is_read_and_typed(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        """
        [scheduler]
        jobs = ["app.jobs", "other.jobs"]
        node_id = "node-a"
        max_sleep = 5
        misfire = "all"
        misfire_grace = 2.5
        hard_timeout_grace = 7
        reap_interval = 3
        renew_interval = 4
        max_in_flight = 50
        history_retention_days = 0
        default_executor = "http"
        lookahead = 0.5
        """,
    )
    s = config.scheduler
    assert s.jobs == ("app.jobs", "other.jobs")
    assert s.node_id == "node-a"
    assert s.max_sleep == 5
    assert s.misfire is MisfirePolicy.ALL
    assert (s.misfire_grace, s.hard_timeout_grace, s.reap_interval, s.renew_interval) == (2.5, 7, 3, 4)
    assert s.max_in_flight == 50
    assert s.history_retention_days == 0
    assert s.default_executor == "http"
    assert s.lookahead == 0.5


def test_unknown_top_level_table_names_file_and_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"t\.toml: unknown table or key 'schedular'"):
        load_text(tmp_path, "[schedular]\njobs = []\n")


def test_unknown_scheduler_key_names_file_and_key(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError,
        match=r"t\.toml: scheduler\.max_slep: unknown key \(did you mean `max_sleep`\?\); known keys: .*max_sleep",
    ):
        load_text(tmp_path, "[scheduler]\nmax_slep = 3\n")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('max_sleep = "10"', r"scheduler\.max_sleep: expected int or float, got str '10'"),
        ("max_in_flight = 2.5", r"scheduler\.max_in_flight: expected int, got float 2\.5"),
        ("max_in_flight = true", r"scheduler\.max_in_flight: expected int, got bool True"),
        ('jobs = "app.jobs"', r"scheduler\.jobs: expected list, got str"),
        ("jobs = [1]", r"scheduler\.jobs: must be a list of module names"),
        ('misfire = "sometimes"', r"scheduler\.misfire: 'sometimes' is not one of skip, once, all"),
        ("max_sleep = 0", r"scheduler\.max_sleep: must be a finite number > 0 and <= 86400, got 0"),
        ("max_sleep = inf", r"scheduler\.max_sleep: must be a finite number > 0 and <= 86400, got inf"),
        ("max_in_flight = 0", r"scheduler\.max_in_flight: must be an integer from 1 to 1000000, got 0"),
        ("history_retention_days = -1", r"scheduler\.history_retention_days: must be a finite number >= 0"),
        (
            "history_retention_days = 1e10",
            r"scheduler\.history_retention_days: must be .* 36500, got 1e?0*",
        ),
        ("hard_timeout_grace = nan", r"scheduler\.hard_timeout_grace: must be a finite number >= 1 .* got nan"),
        ("hard_timeout_grace = 0.001", r"scheduler\.hard_timeout_grace: must be a finite number >= 1"),
        ("misfire_grace = nan", r"scheduler\.misfire_grace: must be a finite number > 0 and <= 3\.1536e\+07"),
        ("reap_interval = inf", r"scheduler\.reap_interval: must be a finite number >= 0\.1 and <= 86400"),
        ("renew_interval = -inf", r"scheduler\.renew_interval: must be a finite number"),
        ('node_id = " "', r"scheduler\.node_id: must not be empty"),
        ("lookahead = 61", r"scheduler\.lookahead: must be a finite number >= 0 and <= 60, got 61"),
        ("lookahead = -0.5", r"scheduler\.lookahead: must be a finite number >= 0 and <= 60"),
        ("lookahead = nan", r"scheduler\.lookahead: must be a finite number >= 0 and <= 60, got nan"),
        ("shutdown_grace = -1", r"scheduler\.shutdown_grace: must be a finite number >= 0 and <= 86400, got -1"),
        ("shutdown_grace = nan", r"scheduler\.shutdown_grace: must be a finite number >= 0 and <= 86400, got nan"),
        ("steal_after = 0", r"scheduler\.steal_after: must be a finite number > 0 and <= 3\.1536e\+07, got 0"),
        ("steal_after = nan", r"scheduler\.steal_after: must be a finite number > 0"),
        ('steal_after = "1s"', r"scheduler\.steal_after: expected"),
    ],
)
def test_wrong_scheduler_values_name_file_and_key(tmp_path: Path, line: str, message: str) -> None:
    with pytest.raises(ConfigError, match=r"t\.toml: " + message):
        load_text(tmp_path, f"[scheduler]\n{line}\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[metrics]\nport = 70000", r"metrics\.port: must be between 0 and 65535"),
        ('[metrics]\nport = "9464"', r"metrics\.port: expected int, got str"),
        ("[metrics]\npath = 1", r"metrics\.path: unknown option; known options: host, port"),
        ('[logging]\nformat = "xml"', r"logging\.format: 'xml' is not one of text, json"),
    ],
)
def test_wrong_metrics_and_logging_values_name_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=r"t\.toml: " + message):
        load_text(tmp_path, text + "\n")


def test_metrics_and_logging_tables(tmp_path: Path) -> None:
    assert load_text(tmp_path, "").find_table(MetricsConfig) is None
    assert load_text(tmp_path, "").table(MetricsConfig) == MetricsConfig(port=9464, host="127.0.0.1")
    assert load_text(tmp_path, "[metrics]\n").find_table(MetricsConfig) == MetricsConfig(port=9464, host="127.0.0.1")
    config = load_text(tmp_path, '[metrics]\nport = 0\nhost = "0.0.0.0"\n[logging]\nformat = "json"\n')
    assert (config.find_table(MetricsConfig), config.logging) == (
        MetricsConfig(port=0, host="0.0.0.0"),
        LoggingConfig(format="json"),
    )
    assert config.scheduler.shutdown_grace == 30


def test_a_table_where_a_value_belongs_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"t\.toml: \[store\] must be a table"):
        load_text(tmp_path, 'store = "sqlite"\n')
    with pytest.raises(ConfigError, match=r"t\.toml: executor\.local: must be a table"):
        load_text(tmp_path, "[executor]\nlocal = 3\n")


def test_store_table_names_the_plugin_and_its_options(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        """
        [store]
        plugin = "sqlite"
        path = "x.db"
        claim = "mark"
        batch_size = 7
        busy_timeout = 2
        poll_interval = 0.5
        create = false
        """,
    )
    store = build_store(config, plugin_manager_for(config))
    assert isinstance(store, SQLiteStore)
    assert store.path == Path("x.db")
    assert store.strategy.name == "mark"
    assert store.batch_size == 7
    assert (store.busy_timeout, store.poll_interval, store.create_empty) == (2.0, 0.5, False)


def test_store_table_without_plugin_means_sqlite(tmp_path: Path) -> None:
    config = load_text(tmp_path, '[store]\npath = "y.db"\n')
    assert config.store.plugin == "sqlite"
    assert isinstance(build_store(config, plugin_manager_for(config)), SQLiteStore)


def test_postgres_store_options(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        """
        [store]
        plugin = "postgres"
        url = "postgresql://u@db.example/app"
        claim = "advisory"
        batch_size = 200
        pool_size = 3
        """,
    )
    store = build_store(config, plugin_manager_for(config))
    assert isinstance(store, PostgresStore)
    assert store.url == "postgresql+psycopg://u@db.example/app"
    assert (store.strategy.name, store.batch_size, store.pool_size) == ("advisory", 200, 3)


def test_unknown_store_option_names_file_and_key(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"t\.toml: store\.paht: unknown option \(did you mean `path`\?\); known options: .*path"
    ):
        load_text(tmp_path, '[store]\nplugin = "sqlite"\npaht = "x.db"\n')


def test_wrong_store_option_type_names_file_and_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"t\.toml: store\.batch_size: expected int, got str '10'"):
        load_text(tmp_path, '[store]\nbatch_size = "10"\n')
    with pytest.raises(ConfigError, match=r"t\.toml: store\.create: expected bool, got int 1"):
        load_text(tmp_path, "[store]\ncreate = 1\n")


def test_claim_strategy_the_store_does_not_support_lists_the_supported_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"not supported by the sqlite store; it supports: optimistic, unique-fire"):
        load_text(tmp_path, '[store]\nclaim = "skip-locked"\n')


def test_membership_and_executor_options(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        """
        [membership]
        plugin = "all"
        heartbeat_interval = 0.5
        node_ttl = 3

        [executor.local]
        max_workers = 2
        mode = "process"

        [executor.http]
        timeout = 5
        headers = { "X-Team" = "ops" }
        """,
    )
    manager = plugin_manager_for(config)
    membership = build_membership(config, manager)
    assert type(membership).__name__ == "AllMembership"
    assert membership.settings.as_dict() == {"heartbeat_interval": 0.5, "node_ttl": 3.0, "presence": True}
    executors = build_executors(config, manager)
    local = executors["local"]
    assert isinstance(local, LocalExecutor)
    assert (local.max_workers, local.mode) == (2, "process")
    http = executors["http"]
    assert isinstance(http, HTTPExecutor)
    assert (http.timeout, http.headers) == (5.0, {"X-Team": "ops"})


def test_unknown_executor_option_names_file_and_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"t\.toml: executor\.local\.workers: unknown option"):
        load_text(tmp_path, "[executor.local]\nworkers = 2\n")


@pytest.mark.parametrize(
    ("text", "build", "kind", "registered"),
    [
        ('[store]\nplugin = "oracle"\n', build_store, "store", ["mysql", "postgres", "sqlite"]),
        ('[membership]\nplugin = "raft"\n', build_membership, "membership", ["all", "single"]),
        ("[executor.grpc]\n", build_executors, "executor", ["http", "local"]),
    ],
)
def test_unknown_plugin_name_lists_the_registered_ones(
    tmp_path: Path, text: str, build: object, kind: str, registered: list[str]
) -> None:
    config = load_text(tmp_path, text)
    with pytest.raises(PluginNotFoundError) as info:
        build(config, plugin_manager_for(config))  # type: ignore[operator]
    assert info.value.kind == kind
    assert set(registered) <= set(info.value.registered)
    assert f"registered {kind} plugins: " in str(info.value)
    for name in registered:
        assert name in str(info.value)


def test_plugin_name_must_be_a_string(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"t\.toml: store\.plugin: expected str, got int"):
        load_text(tmp_path, "[store]\nplugin = 3\n")


# -- ${ENV} -----------------------------------------------------------------------------------------


def test_env_references_are_expanded_in_option_strings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TW_DIR", "/srv/data")
    monkeypatch.setenv("TW_PASSWORD", "s3cret")
    monkeypatch.setenv("TW_TOKEN", "abc")
    monkeypatch.setenv("TW_JOBS", "app.jobs")
    config = load_text(
        tmp_path,
        """
        [scheduler]
        jobs = ["${TW_JOBS}"]

        [store]
        plugin = "postgres"
        url = "postgresql://app:${TW_PASSWORD}@db/app"

        [executor.http]
        headers = { Authorization = "Bearer ${TW_TOKEN}" }
        """,
    )
    assert config.scheduler.jobs == ("app.jobs",)
    manager = plugin_manager_for(config)
    store = build_store(config, manager)
    assert isinstance(store, PostgresStore)
    assert store.url == "postgresql+psycopg://app:s3cret@db/app"
    http = build_executors(config, manager)["http"]
    assert isinstance(http, HTTPExecutor)
    assert http.headers == {"Authorization": "Bearer abc"}

    config = load_text(tmp_path, '[store]\npath = "${TW_DIR}/tickwork-${TW_TOKEN}.db"\n')
    assert build_store(config, manager).path == Path("/srv/data/tickwork-abc.db")  # type: ignore[attr-defined]


def test_text_that_only_looks_like_a_reference_is_kept(tmp_path: Path) -> None:
    config = load_text(tmp_path, '[store]\npath = "$HOME-{x}-${1X}.db"\n')
    assert build_store(config, plugin_manager_for(config)).path == Path("$HOME-{x}-${1X}.db")  # type: ignore[attr-defined]


def test_missing_env_variable_names_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TW_UNSET", raising=False)
    with pytest.raises(ConfigError, match=r"t\.toml: store\.url: environment variable TW_UNSET is not set"):
        load_text(tmp_path, '[store]\nplugin = "postgres"\nurl = "postgresql://u:${TW_UNSET}@h/d"\n')
    with pytest.raises(ConfigError, match=r"executor\.http\.headers\.Authorization: environment variable TW_UNSET"):
        load_text(tmp_path, '[executor.http]\nheaders = { Authorization = "${TW_UNSET}" }\n')
    with pytest.raises(ConfigError, match=r"t\.toml: scheduler\.node_id: environment variable TW_UNSET"):
        load_text(tmp_path, '[scheduler]\nnode_id = "${TW_UNSET}"\n')


# -- [plugins] ---------------------------------------------------------------------------------------


def test_blocked_plugin_is_not_loaded(tmp_path: Path) -> None:
    config = load_text(tmp_path, '[plugins]\nblock = ["http"]\n')
    assert config.blocked_plugins == ("http",)
    manager = plugin_manager_for(config)
    assert "http" not in manager.plugin_names
    assert "http" not in manager.executors
    assert "local" in manager.executors
    config = load_text(tmp_path, '[plugins]\nblock = ["http"]\n[executor.http]\ntimeout = 3\n')
    with pytest.raises(PluginNotFoundError, match=r"unknown executor plugin 'http'; registered executor plugins: "):
        build_executors(config, plugin_manager_for(config))


def test_plugins_table_is_validated(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"t\.toml: plugins\.allow: unknown key; known keys: block$"):
        load_text(tmp_path, "[plugins]\nallow = []\n")
    # A list's type error has the shape of every other type error; its items are named apart.
    with pytest.raises(ConfigError, match=r"t\.toml: plugins\.block: expected list, got str 'http'"):
        load_text(tmp_path, '[plugins]\nblock = "http"\n')
    with pytest.raises(ConfigError, match=r"t\.toml: plugins\.block: must be a list of plugin names"):
        load_text(tmp_path, "[plugins]\nblock = [1]\n")


# -- shipped examples ------------------------------------------------------------------------------


def test_example_config_is_valid() -> None:
    config = load(REPO / "examples" / "tickwork.toml")
    manager = plugin_manager_for(config)
    assert isinstance(build_store(config, manager), SQLiteStore)
    build_membership(config, manager)
    build_executors(config, manager)


def test_full_example_in_the_configuration_reference_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    text = DOC.read_text(encoding="utf-8")
    marker = "<!-- full-example -->"
    assert marker in text, "docs/configuration.md lost its full example marker"
    block = re.search(r"```toml\n(.*?)```", text[text.index(marker) :], re.S)
    assert block is not None
    for name in set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", block.group(1))):
        monkeypatch.setenv(name, "x")
    config = parse(tomllib.loads(block.group(1)))
    manager = plugin_manager_for(config)
    assert isinstance(build_store(config, manager), PostgresStore)
    build_membership(config, manager)
    assert set(build_executors(config, manager)) == {"local", "http"}


def documented_keys(heading: str, nth: int = 0) -> set[str]:
    """Keys in the ``nth`` table under ``heading`` of docs/configuration.md."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    end = text.find("\n#", start + len(heading) + 2)
    section = text[start : end if end != -1 else len(text)]
    tables = section.split("| key |")[1:]
    return set(re.findall(r"^\| `([a-z_]+)` \|", tables[nth].split("\n\n", 1)[0], re.M))


@pytest.mark.parametrize(
    ("heading", "nth", "keys"),
    [
        ("## `[scheduler]`", 0, set(SchedulerConfig.settings())),
        ('### Store `plugin = "sqlite"`', 0, set(SQLiteStore.section.settings())),
        ('### Store `plugin = "postgres"`', 0, set(PostgresStore.section.settings())),
        ("## `[membership]`", 0, {"plugin"}),
        ("## `[membership]`", 1, set(SingleMembership.section.settings())),
        ("## `[membership]`", 2, set(HashRingMembership.section.settings())),
        ("## `[executor.local]`", 0, set(LocalExecutor.section.settings())),
        ("## `[executor.http]`", 0, set(HTTPExecutor.section.settings())),
        ("## `[plugins]`", 0, set(PluginsConfig.settings())),
        ("## `[metrics]`", 0, set(MetricsConfig.settings())),
        ("## `[logging]`", 0, set(LoggingConfig.settings())),
    ],
)
def test_the_reference_documents_exactly_the_keys_that_exist(heading: str, nth: int, keys: set[str]) -> None:
    assert documented_keys(heading, nth) == keys


def test_the_reference_s_key_tables_are_rendered_from_the_declarations() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert {"scheduler", "store", "membership", "plugins", "logging", "metrics", "web"} <= set(marked_tables(text))
    assert stale(text) == [], f"docs/configuration.md: {stale(text)} differ from the declarations; run: {COMMAND}"
    assert render(text) == text


def test_the_reference_lists_each_store_s_claim_strategies_default_first() -> None:
    text = DOC.read_text(encoding="utf-8")
    for store in (SQLiteStore, PostgresStore):
        listed = ", ".join(f"`{name}`" for name in store.claim_strategies)
        assert f"One of {listed}." in text
        assert f'| `claim` | string | `"{store.claim_strategies[0]}"` |' in text
