"""Every store, executor and membership declares its options as a Section: the file is checked
against it as it is read (a wrong type, an out-of-range value, an unknown key with the closest
known one), plugins are built from it, and the reference renders it. A third-party plugin gets
all of that by declaring a Section."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import REPO
from tickwork.abc import Executor
from tickwork.config import ConfigTables, Integer, Section, Text, parse
from tickwork.config.reference import render
from tickwork.errors import ConfigError, ConfigProblems
from tickwork.plugin import Registry, hookimpl
from tickwork.plugin.assembly import build_executors, build_membership, build_store
from tickwork.plugin.manager import PluginManager, plugin_manager_for
from tickwork.structures import JobCall, Outcome


def problem(data: dict[str, Any], tables: ConfigTables | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        parse(data, Path("t.toml"), tables=tables)
    return str(info.value)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"store": {"busy_timeout": "3"}}, "t.toml: store.busy_timeout: expected int or float, got str '3'"),
        ({"store": {"poll_interval": 0}}, "t.toml: store.poll_interval: must be a finite number >= 0.01 and <= 60"),
        ({"store": {"pth": "x.db"}}, "t.toml: store.pth: unknown option (did you mean `path`?)"),
        (
            {"store": {"plugin": "postgres", "url": "postgresql://u@h/d", "lock_timeout": 0}},
            "t.toml: store.lock_timeout: must be a finite number >= 0.001 and <= 3600",
        ),
        ({"store": {"plugin": "postgres"}}, 't.toml: store.url: required, e.g. "postgresql://'),
        (
            {"store": {"plugin": "mysql", "url": "mysql://u@h/d", "pool_size": 0}},
            "t.toml: store.pool_size: must be an integer from 1 to 1000, got 0",
        ),
        ({"store": {"plugin": "mysql", "url": "redis://h"}}, "t.toml: store.url: expected a mysql:// URL, got 'redis'"),
        ({"executor": {"local": {"mode": 3}}}, "t.toml: executor.local.mode: expected str, got int 3"),
        ({"executor": {"local": {"max_workers": 0}}}, "t.toml: executor.local.max_workers: must be an integer from 1"),
        ({"executor": {"http": {"timeout": -1}}}, "t.toml: executor.http.timeout: must be a finite number > 0"),
        (
            {"executor": {"http": {"verify_tl": True}}},
            "executor.http.verify_tl: unknown option (did you mean `verify_tls`?)",
        ),
        (
            {"executor": {"celery": {"app": "proj.celery:app", "report_timout": 5}}},
            "t.toml: executor.celery.report_timout: unknown option (did you mean `report_timeout`?)",
        ),
        ({"executor": {"celery": {"app": "proj"}}}, 't.toml: executor.celery.app: expected "module:attribute"'),
        ({"executor": {"rq": {"url": "redis://h", "threads": 0}}}, "t.toml: executor.rq.threads: must be an integer"),
        ({"executor": {"dramatiq": {"queue": "q"}}}, "t.toml: executor.dramatiq.broker: required"),
        ({"executor": {"jobqueue": {"url": "sqlite:///q.db", "import_targets": "no"}}}, "expected bool, got str 'no'"),
        ({"membership": {"presence": 1}}, "t.toml: membership.presence: expected bool, got int 1"),
        ({"membership": {"plugin": "hashring", "owners": 0}}, "t.toml: membership.owners: must be an integer from 1"),
        (
            {"membership": {"plugin": "hashring", "vnode": 8}},
            "membership.vnode: unknown option (did you mean `vnodes`?)",
        ),
        ({"membership": {"node_ttl": 1}}, "t.toml: membership.node_ttl: must exceed two heartbeat intervals"),
    ],
)
def test_every_plugin_table_is_checked_as_the_file_is_read(data: dict[str, Any], message: str) -> None:
    assert message in problem(data)


def test_a_file_with_several_problems_names_each() -> None:
    with pytest.raises(ConfigProblems) as info:
        parse(
            {
                "scheduler": {"max_slep": 1},
                "store": {"batch_size": 0},
                "executor": {"local": {"mod": "thread"}, "http": {"timeout": "5"}},
                "membership": {"heartbeat_interval": 0},
            },
            Path("t.toml"),
        )
    assert info.value.summary == "t.toml: 5 problems"
    assert [line.split(":")[1].strip() for line in info.value.problems] == [
        "scheduler.max_slep",
        "store.batch_size",
        "membership.heartbeat_interval",
        "executor.local.mod",
        "executor.http.timeout",
    ]


def test_plugins_are_built_from_their_checked_declarations(tmp_path: Path) -> None:
    config = parse(
        {
            "store": {"path": str(tmp_path / "s.db"), "busy_timeout": 2},
            "membership": {"plugin": "hashring", "owners": 3},
            "executor": {"local": {"allowed_modules": ["myapp."]}},
        }
    )
    manager = plugin_manager_for(config)
    store = build_store(config, manager)
    assert (store.busy_timeout, store.poll_interval) == (2.0, 0.1)  # type: ignore[attr-defined]
    membership = build_membership(config, manager)
    assert (membership.owners, membership.node_ttl) == (3, 4.0)
    assert build_executors(config, manager)["local"].settings.allowed_modules == ("myapp.",)


def test_a_constructor_checks_its_keywords_with_the_same_declaration(tmp_path: Path) -> None:
    from tickwork_local.executor import LocalExecutor
    from tickwork_sqlite.store import SQLiteStore

    with pytest.raises(ConfigError, match=r"^executor\.local\.max_workers: must be an integer from 1 to 10000, got 0"):
        LocalExecutor(max_workers=0)
    with pytest.raises(TypeError, match="unknown keys: workers"):
        LocalExecutor(workers=2)
    assert SQLiteStore(str(tmp_path / "d.db")).busy_timeout == SQLiteStore.section.busy_timeout.default


# -- a third-party plugin ----------------------------------------------------------------------------


class PigeonSettings(Section, table="executor.pigeon"):
    birds = Integer(2, low=1, high=12, help="Pigeons in the loft.")
    loft = Text("roof", nonblank=True, help="Where they live.")


class PigeonExecutor(Executor):
    section = PigeonSettings
    settings: PigeonSettings

    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        """Any target."""

    def submit(self, call: JobCall, on_done: Callable[[Outcome], None]) -> None:
        raise NotImplementedError

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        """Nothing to stop."""


class PigeonPlugin:
    @hookimpl
    def tickwork_register_executors(self, registry: Registry[type[Executor]]) -> None:
        registry.add("pigeon", PigeonExecutor)


@pytest.fixture(scope="module")
def manager() -> PluginManager:
    return PluginManager(extra=[PigeonPlugin()])


def test_a_third_party_plugin_gets_the_checks_by_declaring_a_section(manager: PluginManager) -> None:
    tables = manager.config_tables
    assert tables.options("executor", "pigeon") is PigeonSettings
    assert "executor.pigeon.bird: unknown option (did you mean `birds`?); known options: birds, loft" in problem(
        {"executor": {"pigeon": {"bird": 3}}}, tables
    )
    assert "executor.pigeon.birds: must be an integer from 1 to 12, got 13" in problem(
        {"executor": {"pigeon": {"birds": 13}}}, tables
    )
    config = parse({"executor": {"pigeon": {"birds": 5, "loft": "${HOME}"}}}, tables=tables)
    pigeon = build_executors(config, manager)["pigeon"]
    assert isinstance(pigeon, PigeonExecutor)
    assert (pigeon.settings.birds, pigeon.settings.loft) == (5, str(Path.home()))
    # Without the plugin the name is unknown at build, and its table is not checked.
    assert parse({"executor": {"pigeon": {"bird": 3}}}).executors == {"pigeon": {"bird": 3}}


def test_a_third_party_plugin_s_options_are_rendered_into_the_reference(manager: PluginManager) -> None:
    text = "intro\n<!-- BEGIN GENERATED [executor.pigeon]: x -->\nold\n<!-- END GENERATED [executor.pigeon] -->\n"
    fresh = render(text, manager.config_tables)
    assert "| `birds` | integer, 1 to 12 | `2` | Pigeons in the loft. |" in fresh
    assert '| `loft` | string | `"roof"` | Where they live. |' in fresh
    with pytest.raises(KeyError, match=r"executor\.pigeon"):
        render(text)


def test_the_reference_renders_every_built_in_plugin_s_options() -> None:
    text = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    for name in (
        "store.sqlite",
        "store.postgres",
        "store.mysql",
        "membership.single",
        "membership.hashring",
        "executor.local",
        "executor.http",
        "executor.jobqueue",
        "executor.celery",
        "executor.rq",
        "executor.dramatiq",
    ):
        assert f"<!-- BEGIN GENERATED [{name}]:" in text, name
