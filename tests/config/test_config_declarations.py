"""One declaration per key: a key declared once reaches the parser, the engine's settings,
``Node.from_config`` and the rendered reference; plugins declare their own tables."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import tickwork
from tests.support.paths import REPO
from tickwork.config import (
    ConfigTables,
    Integer,
    Number,
    SchedulerConfig,
    Section,
    Text,
    config_from,
    parse,
)
from tickwork.config.reference import COMMAND, render, render_table, stale
from tickwork.engine import EngineSettings
from tickwork.errors import ConfigError
from tickwork.plugin import hookimpl
from tickwork.plugin.manager import PluginManager
from tickwork_metrics.settings import MetricsConfig
from tickwork_web.settings import WebConfig

DOC = REPO / "docs" / "configuration.md"


@pytest.fixture
def knob() -> Iterator[Number]:
    """A ``[scheduler]`` key that exists for one test: its one declaration."""
    setting = Number(2.5, low=0, high=10, low_open=True, help="A knob for this test only.")
    SchedulerConfig.declare("throwaway", setting)
    yield setting
    SchedulerConfig.undeclare("throwaway")


def test_a_declared_scheduler_key_is_parsed_type_and_range_checked(knob: Number) -> None:
    assert parse({}).scheduler["throwaway"] == 2.5
    assert parse({"scheduler": {"throwaway": 4}}).scheduler["throwaway"] == 4.0
    with pytest.raises(
        ConfigError, match=r"<config>: scheduler\.throwaway: must be a finite number > 0 and <= 10, got 11"
    ):
        parse({"scheduler": {"throwaway": 11}})
    with pytest.raises(ConfigError, match=r"scheduler\.throwaway: expected int or float, got str '4'"):
        parse({"scheduler": {"throwaway": "4"}})
    with pytest.raises(
        ConfigError, match=r"scheduler\.throwawy: unknown key \(did you mean `throwaway`\?\); known keys: .*throwaway"
    ):
        parse({"scheduler": {"throwawy": 4}})


def test_a_declared_scheduler_key_reaches_the_engine_settings(knob: Number) -> None:
    settings = EngineSettings.of(parse({"scheduler": {"throwaway": 4}}).scheduler, batch_size=7)
    assert (settings["throwaway"], settings.batch_size) == (4.0, 7)
    assert EngineSettings()["throwaway"] == 2.5
    with pytest.raises(ConfigError, match=r"^scheduler\.throwaway: must be a finite number > 0"):
        EngineSettings(throwaway=0)


def test_a_declared_scheduler_key_is_a_node_override(knob: Number, tmp_path: Path) -> None:
    store = {"store": {"path": str(tmp_path / "k.db")}}
    node = tickwork.Node.from_config(store, throwaway=7)
    assert (node.config.scheduler["throwaway"], node.engine.settings["throwaway"]) == (7.0, 7.0)
    with pytest.raises(ConfigError, match=r"scheduler\.throwawy: unknown key \(did you mean `throwaway`\?\)"):
        tickwork.Node.from_config(store, throwawy=7)


def test_a_declared_scheduler_key_is_in_the_rendered_reference(knob: Number) -> None:
    assert "| `throwaway` | number, > 0 and ≤ 10 | `2.5` | A knob for this test only. |" in render_table(
        SchedulerConfig
    )
    text = DOC.read_text(encoding="utf-8")
    assert stale(text) == ["scheduler"]
    assert "`throwaway`" in render(text)


def test_the_engine_runs_with_every_scheduler_key_as_configured() -> None:
    """No second list: the engine's settings are the [scheduler] values, plus the store's batch size."""
    config = parse({"scheduler": {"max_sleep": 5, "lookahead": 0, "history_retention_days": 0, "misfire": "all"}})
    settings = EngineSettings.of(config.scheduler, batch_size=10)
    assert set(EngineSettings.settings()) == {*SchedulerConfig.settings(), "batch_size"}
    for key in SchedulerConfig.settings():
        assert getattr(settings, key) == getattr(config.scheduler, key), key
    assert settings.history_retention is None
    assert EngineSettings(history_retention_days=2).history_retention is not None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        # The ranges the reference promised, where a node built in code used to accept more.
        ("hard_timeout_grace", 0.5),
        ("reap_interval", 0.05),
        ("renew_interval", 0.05),
        ("lookahead", 61),
        ("max_in_flight", 1_000_001),
        ("node_id", " "),
    ],
)
def test_the_engine_and_the_file_refuse_the_same_values(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=rf"^scheduler\.{key}: "):
        EngineSettings(**{key: value})
    with pytest.raises(ConfigError, match=rf"^<config>: scheduler\.{key}: "):
        parse({"scheduler": {key: value}})


def test_a_section_is_a_frozen_typed_value() -> None:
    s = SchedulerConfig(node_id="n1", max_sleep=5, jobs=("a.jobs",))
    assert (s.max_sleep, s.jobs, SchedulerConfig.max_sleep.default) == (5.0, ("a.jobs",), 60.0)
    with pytest.raises(AttributeError, match="frozen"):
        s.max_sleep = 3  # type: ignore[misc]
    assert s.replace(max_sleep=3).max_sleep == 3.0 and s.max_sleep == 5.0
    assert s == SchedulerConfig(node_id="n1", max_sleep=5.0, jobs=("a.jobs",))
    with pytest.raises(TypeError, match="unknown keys: max_slep"):
        SchedulerConfig(max_slep=3)


# -- tables declared by plugins ---------------------------------------------------------------------


class ThrowawayConfig(Section, table="throwaway"):
    level = Integer(3, low=1, high=5, help="How loud.")
    label = Text("x", help="What it says.")


class ThrowawayPlugin:
    @hookimpl
    def tickwork_add_config(self, tables: ConfigTables) -> None:
        tables.add(ThrowawayConfig)


@pytest.fixture(scope="module")
def manager() -> PluginManager:
    return PluginManager(extra=[ThrowawayPlugin()])


def test_a_plugin_declares_a_table_the_parser_checks(manager: PluginManager) -> None:
    tables = manager.config_tables
    assert tables.owner("throwaway") == "ThrowawayPlugin" and tables.owner("metrics") == "metrics"
    config = parse({"throwaway": {"level": 4, "label": "${HOME}"}}, tables=tables)
    found = config.find_table(ThrowawayConfig)
    assert found is not None and (found.level, found.label) == (4, str(Path.home()))
    assert parse({}, tables=tables).find_table(ThrowawayConfig) is None
    assert parse({}, tables=tables).table(ThrowawayConfig) == ThrowawayConfig(level=3, label="x")
    with pytest.raises(
        ConfigError, match=r"throwaway\.levl: unknown option \(did you mean `level`\?\); known options: label, level"
    ):
        parse({"throwaway": {"levl": 4}}, tables=tables)
    with pytest.raises(ConfigError, match=r"throwaway\.level: must be an integer from 1 to 5, got 9"):
        parse({"throwaway": {"level": 9}}, tables=tables)
    with pytest.raises(
        ConfigError, match=r"unknown table or key 'throwawy' \(did you mean `throwaway`\?\); known: .*throwaway"
    ):
        parse({"throwawy": {}}, tables=tables)
    # Without the plugin the table is unknown.
    with pytest.raises(
        ConfigError, match=r"unknown table or key 'throwaway'; known: calendars, executor, health, logging, membership"
    ):
        parse({"throwaway": {}})


def test_a_plugin_table_is_an_override_and_in_the_reference(manager: PluginManager) -> None:
    config = config_from({"throwaway": {"level": 2}}, {"throwaway": {"label": "y"}}, tables=manager.config_tables)
    assert config.table(ThrowawayConfig) == ThrowawayConfig(level=2, label="y")
    text = "intro\n<!-- BEGIN GENERATED [throwaway]: x -->\nold\n<!-- END GENERATED [throwaway] -->\nend\n"
    fresh = render(text, manager.config_tables)
    assert "| `level` | integer, 1 to 5 | `3` | How loud. |" in fresh and fresh.endswith("-->\nend\n")
    with pytest.raises(KeyError, match="throwaway"):
        render(text)


def test_a_node_refuses_a_table_its_plugins_do_not_declare(manager: PluginManager, tmp_path: Path) -> None:
    config = parse({"store": {"path": str(tmp_path / "t.db")}, "throwaway": {}}, tables=manager.config_tables)
    assert tickwork.Node(config, manager=manager).config is config
    with pytest.raises(ConfigError, match=r"throwaway: no loaded plugin declares the \[throwaway\] table"):
        tickwork.Node(config)


def test_a_table_name_is_declared_once() -> None:
    class Again:
        @hookimpl
        def tickwork_add_config(self, tables: ConfigTables) -> None:
            tables.add(ThrowawayConfig)

    class Core:
        @hookimpl
        def tickwork_add_config(self, tables: ConfigTables) -> None:
            tables.add(SchedulerConfig)

    twice = r"the table \[throwaway\] is declared twice: by plugin '(Again|ThrowawayPlugin)' and by plugin '(?!\1)"
    with pytest.raises(ConfigError, match=twice):
        PluginManager(extra=[ThrowawayPlugin(), Again()], entry_points_enabled=False)
    with pytest.raises(ConfigError, match=r"plugin 'Core' declares the table \[scheduler\], which is tickwork's own"):
        PluginManager(extra=[Core()], entry_points_enabled=False)


def test_the_metrics_and_web_tables_are_their_plugins(tmp_path: Path) -> None:
    """``Node.from_config(web=...)`` used to fail: the override list had drifted from the parser's."""
    node = tickwork.Node.from_config({"store": {"path": str(tmp_path / "w.db")}}, web={"port": 0}, metrics={"port": 0})
    assert node.config.table(WebConfig).port == 0
    assert node.config.find_table(MetricsConfig) == MetricsConfig(port=0)
    with pytest.raises(ConfigError, match=r"unknown table or key 'metric' \(did you mean `metrics`\?\)"):
        tickwork.Node.from_config({}, metric={"port": 0})
    with pytest.raises(ConfigError, match=r"<config>: web: the \[web\] table is given as a dict, got bool True"):
        tickwork.Node.from_config({}, web=True)
    with pytest.raises(ConfigError, match=r"web\.port: must be between 0 and 65535 \(0: any free port\), got 70000"):
        parse({"web": {"port": 70000}})


def test_a_table_of_a_blocked_plugin_says_so() -> None:
    with pytest.raises(
        ConfigError,
        match=r"<config>: web: the web plugin is not loaded \(\[plugins\] block lists it\): remove the \[web\] table",
    ):
        parse({"web": {}, "plugins": {"block": ["web"]}})
    with pytest.raises(
        ConfigError, match=r"unknown table or key 'dash'.*; the tables of blocked plugins \(web\) are unknown"
    ):
        parse({"dash": {}, "plugins": {"block": ["web"]}})
    assert parse({"metrics": {}, "plugins": {"block": ["web"]}}).find_table(MetricsConfig) == MetricsConfig()


def test_the_configuration_never_imports_the_plugin_layer() -> None:
    """config/ is below plugin/: the manager hands it the plugins' tables, not the other way."""
    config_dir = Path(tickwork.__file__).parent / "config"
    for path in config_dir.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                assert not (
                    module.startswith("tickwork.plugin") or (node.level == 2 and module.startswith("plugin"))
                ), path
                assert not (node.level >= 2 and module.startswith(("node", "engine", "cli", "admin"))), path


def test_the_reference_command_checks_and_rewrites(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tickwork.config.reference", *args], capture_output=True, text=True
        )

    assert run("--check", str(DOC)).returncode == 0
    copy = tmp_path / "configuration.md"
    copy.write_text(DOC.read_text(encoding="utf-8").replace("| `max_sleep` | number", "| `max_sleep` | numbr"))
    checked = run("--check", str(copy))
    assert checked.returncode == 1 and f"stale tables: scheduler; run: {COMMAND}" in checked.stderr
    assert run("--write", str(copy)).returncode == 0
    assert copy.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8")
