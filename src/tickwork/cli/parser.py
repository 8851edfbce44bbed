"""The ``tickwork`` argument parser: the global options, and a subparser for every registered
command (each :class:`~tickwork.plugin.Command` adds its own options; a
:class:`~tickwork.plugin.CommandGroup` a subparser per action).

The global options (``-c/--config``, ``--log-level``, ``--json``, ``--namespace``) are accepted before or after the
subcommand: the top-level parser holds their defaults, and every subcommand parser repeats them
with ``SUPPRESS`` defaults, so that a value given after the subcommand wins and an absent one does
not overwrite a value given before it.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import NoReturn

from .. import __version__
from ..errors import ConfigError, did_you_mean
from ..plugin.command import Command, CommandGroup
from ..plugin.registry import Registry
from ..structures import DEFAULT_NAMESPACE

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_LEVEL_ENV = "TICKWORK_LOG_LEVEL"
NAMESPACE_ENV = "TICKWORK_NAMESPACE"

EPILOG = f"""\
environment:
  TICKWORK_CONFIG     config file used when -c/--config is not given (else ./tickwork.toml)
  {LOG_LEVEL_ENV:<19} log level used when --log-level is not given
  {NAMESPACE_ENV:<19} namespace used when --namespace is not given (else default)

exit status:
  0  success
  1  a state the command cannot act on (unknown schedule, outdated schema, missing database, ...)
  2  invalid usage or configuration (bad option, expression, config key, job module, ...)

Global options may come before or after the command: `tickwork -c prod.toml jobs list` and
`tickwork jobs list -c prod.toml` are the same. Docs: docs/cli.md.
"""


def _globals(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("global options (before or after the command)")
    group.add_argument(
        "-c",
        "--config",
        metavar="FILE",
        default=default(None),
        help="TOML config file (default: $TICKWORK_CONFIG, else ./tickwork.toml, else built-in defaults)",
    )
    group.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        metavar="LEVEL",
        default=default(None),
        help=f"{', '.join(LOG_LEVELS)} (default: ${LOG_LEVEL_ENV}, else INFO for run and WARNING otherwise)",
    )
    group.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="machine-readable output: one JSON object per line",
    )
    # Repeatable, for the one command that takes several (`tokens create`: the token's scope);
    # every other command acts in one namespace (namespace_of).
    group.add_argument(
        "--namespace",
        metavar="NAME",
        action="append",
        default=default(None),
        help=f"the namespace schedules are named in and listed from; '*' lists every namespace "
        f"(default: ${NAMESPACE_ENV}, else default)",
    )


def namespaces_given(args: argparse.Namespace) -> list[str]:
    """Every ``--namespace`` given (in order), none when it was not."""
    given: list[str] | None = getattr(args, "namespace", None)
    return list(given or [])


def namespace_of(args: argparse.Namespace) -> str:
    """The namespace a command acts in: ``--namespace``, else ``$TICKWORK_NAMESPACE``, else
    ``default`` (docs/teams.md). Checked by :class:`tickwork.Admin`, which refuses a bad one.

    :raises tickwork.ConfigError: ``--namespace`` given more than once
    """
    given = namespaces_given(args)
    if len(given) > 1:
        raise ConfigError(f"--namespace: one namespace at a time, got {', '.join(given)}")
    return (given[0] if given else None) or os.environ.get(NAMESPACE_ENV) or DEFAULT_NAMESPACE


def _command(sub: argparse._SubParsersAction[Parser], name: str, command: type[Command]) -> argparse.ArgumentParser:
    text = command.help or f"the {name} command"
    description = command.description or text[0].upper() + text[1:] + "."
    if issubclass(command, CommandGroup):
        # The global options go with the actions (`tickwork jobs list --json`).
        group = sub.add_parser(name, help=text, description=description)
        actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")
        for action_name, action in command.actions.items():
            _command(actions, action_name, action)
        return group
    parser = sub.add_parser(name, help=text, description=description)
    _globals(parser, suppress=True)
    command.add_arguments(parser)
    return parser


#: argparse's refusal of a command, action or option value (quoted choices up to Python 3.12.7).
_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<given>[^']*)' \(choose from (?P<choices>.*)\)$")


class Parser(argparse.ArgumentParser):
    """An argument parser whose "invalid choice" error names the closest choice (``tickwork jbos``:
    ``did you mean 'jobs'?``); subparsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        found = _INVALID_CHOICE.search(message)
        if found is not None:
            choices = [c.strip().strip("'") for c in found["choices"].split(",")]
            message += did_you_mean(found["given"], choices)
        super().error(message)


def build_parser(commands: Registry[type[Command]]) -> argparse.ArgumentParser:
    """The ``tickwork`` parser for the registered ``commands`` (built-in ones first)."""
    parser = Parser(
        prog="tickwork",
        description="Periodic jobs, fired exactly once per due time across a cluster of nodes.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tickwork {__version__}")
    _globals(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in commands:
        _command(sub, name, command)
    return parser
