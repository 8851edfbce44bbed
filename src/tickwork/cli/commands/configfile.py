"""``tickwork config check|show``: the configuration file itself, read without starting
anything or connecting to a database (reference: docs/cli.md#config)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, ClassVar

from ...config.files import Config, find_config_file
from ...errors import ConfigError, ConfigProblems
from ...plugin.command import Command, CommandGroup
from ...plugin.inspection import ShownKey, check_file, effective, found_through
from ..exitcodes import EXIT_USAGE


class ConfigCheck(Command):
    help = "check every table and key of the configuration, the plugins' included; start nothing"
    description = (
        "Check the configuration file as a node would read it: every table and key, the options of the store, "
        "the membership and each executor, and the tables plugins declare. Nothing is started and no database "
        "is opened. Exit 0 when it is valid, 2 listing every problem."
    )
    reads_config_itself = True

    def run(self, args: argparse.Namespace, config: Config) -> int:
        report = check_file(args.config)
        if args.json:
            print(json.dumps(report.as_json()))
            return 0 if report.valid else EXIT_USAGE
        where = str(report.source) if report.source else "<config>"
        if len(report.problems) == 1:
            raise ConfigError(report.problems[0])
        if report.problems:
            raise ConfigProblems(f"{where}: {len(report.problems)} problems", report.problems)
        print(f"{report.source} is valid" if report.source else "no configuration file: the defaults are valid")
        return 0


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def _line(shown: ShownKey, path: Path | None) -> str:
    origin = f"file {path}" if shown.source == "file" else shown.source
    if shown.env:
        origin += f" (${', $'.join(shown.env)})"
    if shown.source != "default":
        origin += (
            f"; default {'required' if shown.default is None and shown.value is not None else _toml(shown.default)}"
        )
    if shown.value is None:
        return f"# {shown.key}: not set  # {origin}"
    return f"{shown.key} = {_toml(shown.value)}  # {origin}"


class ConfigShow(Command):
    help = "print the effective configuration: every key, its value, default and source"
    description = (
        "Print the effective configuration: every table (the plugins' included) and every key with its value, "
        "its default and where it came from (file, environment through a ${NAME} reference, or default). "
        "Secrets are masked as ***. The file is checked first, as by `tickwork config check`."
    )
    reads_config_itself = True

    def run(self, args: argparse.Namespace, config: Config) -> int:
        effective_config, tables = effective(args.config)
        path = effective_config.source
        if args.json:
            print(
                json.dumps(
                    {
                        "file": str(path) if path else None,
                        "tables": {
                            name: {shown.key: shown.as_json(path) for shown in keys} for name, keys in tables.items()
                        },
                    }
                )
            )
            return 0
        print(f"# {found_through(find_config_file(args.config), args.config)}")
        for name, keys in tables.items():
            print(f"\n[{name}]")
            for shown in keys:
                print(_line(shown, path))
        return 0


class ConfigCommand(CommandGroup):
    help = "the configuration file: check it, show its effective values"
    description = "The configuration file (docs/configuration.md)."
    actions: ClassVar[dict[str, type[Command]]] = {"check": ConfigCheck, "show": ConfigShow}
