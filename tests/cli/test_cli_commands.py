"""Every command, built-in or a plugin's, is a ``tickwork.plugin.Command`` registered through the
``tickwork_register_commands`` hook; the built-in ones by an internal plugin of the core that is
loaded first and cannot be blocked."""

from __future__ import annotations

import argparse
from types import SimpleNamespace
from typing import ClassVar

import pytest

from tickwork.cli.parser import build_parser
from tickwork.config import Config, parse
from tickwork.errors import ConfigError
from tickwork.plugin import Command, CommandGroup, Registry, hookimpl
from tickwork.plugin.manager import INTERNAL_PLUGINS, PluginManager

BUILTIN = ["run", "next", "jobs", "apply", "history", "nodes", "check", "config", "db", "tokens"]


class Hello(Command):
    help = "say hello"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--to", default="world")

    def run(self, args: argparse.Namespace, config: Config) -> int:
        print(f"hello {args.to}{' (json)' if args.json else ''}")
        return 0


class Bye(Command):
    help = "say goodbye"

    def run(self, args: argparse.Namespace, config: Config) -> int:
        print("bye")
        return 3


class Greet(CommandGroup):
    help = "greetings"
    actions: ClassVar[dict[str, type[Command]]] = {"hello": Hello, "bye": Bye}


def plugin_adding(name: str, command: type[Command]) -> object:
    @hookimpl
    def tickwork_register_commands(registry: Registry[type[Command]]) -> None:
        registry.add(name, command)

    return SimpleNamespace(tickwork_register_commands=tickwork_register_commands)


def test_the_built_in_commands_are_registered_through_the_hook_by_the_core() -> None:
    commands = PluginManager(entry_points_enabled=False).commands
    assert commands.names() == BUILTIN
    assert {commands.owner(name) for name in BUILTIN} == set(INTERNAL_PLUGINS)


def test_built_in_commands_cannot_be_blocked() -> None:
    manager = PluginManager(block=INTERNAL_PLUGINS, entry_points_enabled=False)
    assert manager.commands.names() == BUILTIN


def test_built_in_commands_come_first_whatever_the_plugin_order() -> None:
    manager = PluginManager(extra=[plugin_adding("greet", Greet)], entry_points_enabled=False)
    assert manager.commands.names() == [*BUILTIN, "greet"]


@pytest.mark.parametrize("name", BUILTIN)
def test_a_plugin_command_may_not_take_a_built_in_name(name: str) -> None:
    with pytest.raises(ConfigError, match=f"command '{name}' is registered twice: by tickwork.cli.commands and by "):
        PluginManager(extra=[plugin_adding(name, Hello)], entry_points_enabled=False)


def test_a_plugin_command_group_runs_the_chosen_action(capsys: pytest.CaptureFixture[str]) -> None:
    commands = PluginManager(extra=[plugin_adding("greet", Greet)], entry_points_enabled=False).commands
    parser = build_parser(commands)
    args = parser.parse_args(["greet", "hello", "--to", "you", "--json"])
    assert commands.get(args.command)().run(args, parse({})) == 0
    args = parser.parse_args(["greet", "bye"])
    assert commands.get(args.command)().run(args, parse({})) == 3
    assert capsys.readouterr().out == "hello you (json)\nbye\n"
    with pytest.raises(SystemExit):
        parser.parse_args(["greet"])  # an action is required
    assert "the following arguments are required: ACTION" in capsys.readouterr().err
