"""Deferred implementations: a plugin's store or executor is imported when it is first used, not
when every process loads every plugin."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tickwork.config.declarations import Section
from tickwork.errors import ConfigError
from tickwork.plugin import Deferred, Registry
from tickwork.plugin.manager import PluginManager
from tickwork_local.settings import LocalSettings
from tickwork_sqlite.settings import SQLiteSettings

#: What ``tickwork --help`` and ``tickwork config check`` imported before deferral, and no longer.
HEAVY = ("alembic", "psycopg", "pymysql", "httpx", "tickwork_jobqueue.executor", "tickwork_sqlite.store")

PROBE = r"""
import contextlib, io, json, sys
from tickwork.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after(*argv: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_help_imports_no_store_driver_alembic_or_executor() -> None:
    loaded = _modules_after("--help")
    assert [m for m in HEAVY if m in loaded] == []
    # The plugins themselves were loaded: their commands are listed.
    assert "tickwork_sqlite.plugin" in loaded and "tickwork_jobqueue.plugin" in loaded


def test_a_deferred_implementation_is_imported_on_first_lookup_only() -> None:
    registry: Registry[type[object]] = Registry("store")
    calls: list[str] = []

    class Fake:
        section = SQLiteSettings

    def load() -> type[object]:
        calls.append("load")
        return Fake

    registry.add("fake", Deferred(load, section=SQLiteSettings))
    assert registry.section_of("fake") is SQLiteSettings and calls == []
    assert "fake" in registry and registry.names() == ["fake"] and calls == []
    assert registry.get("fake") is Fake and registry.get("fake") is Fake
    assert calls == ["load"]
    assert list(registry) == [("fake", Fake)]


def test_a_reference_is_imported_by_name() -> None:
    registry: Registry[type[object]] = Registry("executor")
    registry.add("local", Deferred("tickwork_local.executor:LocalExecutor", section=LocalSettings))
    from tickwork_local.executor import LocalExecutor

    assert registry.get("local") is LocalExecutor


def test_a_section_that_is_not_the_implementations_own_is_an_error() -> None:
    class Other(Section, table="executor.other"):
        pass

    registry: Registry[type[object]] = Registry("executor")
    registry.add("local", Deferred("tickwork_local.executor:LocalExecutor", section=Other))
    with pytest.raises(ConfigError, match="registered with"):
        registry.get("local")


def test_every_built_in_deferred_section_is_the_implementations_own() -> None:
    manager = PluginManager()
    for registry in (manager.stores, manager.executors, manager.memberships):
        for name in registry.names():
            declared = registry.section_of(name)
            assert registry.get(name).section is declared, (registry.kind, name)
