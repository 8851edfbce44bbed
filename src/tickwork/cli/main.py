"""The ``tickwork`` command line (reference: docs/cli.md): reading the arguments, setting up
logging, running the chosen command and turning its errors into one line and an exit status.

Every command, built-in or a plugin's, is a :class:`~tickwork.plugin.Command` registered through
the ``tickwork_register_commands`` hook (the built-in ones in :mod:`tickwork.cli.commands`).
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Sequence

from ..config.files import Config, load
from ..errors import ConfigError, ConfigProblems, DeclarationError, ExecutorError, TickworkError, TriggerError
from ..node import logformat
from ..plugin.command import Command
from ..plugin.manager import PluginManager, plugin_manager_for
from ..plugin.registry import Registry
from .exitcodes import EXIT_STATE, EXIT_USAGE
from .parser import LOG_LEVEL_ENV, LOG_LEVELS, build_parser

__all__ = ["EXIT_STATE", "EXIT_USAGE", "builtin_commands", "main"]

log = logging.getLogger("tickwork.cli")


@functools.cache
def builtin_commands() -> Registry[type[Command]]:
    """The commands of tickwork itself (plugins may add more): those of the core's internal
    plugins, registered through the same hook as a plugin's."""
    return PluginManager(entry_points_enabled=False).commands


def _setup_logging(level: str | None, default: str) -> None:
    env = os.environ.get(LOG_LEVEL_ENV, "").strip().upper()
    if level is None and env:
        if env not in LOG_LEVELS:
            raise ConfigError(f"${LOG_LEVEL_ENV}: {env!r} is not one of {', '.join(LOG_LEVELS)}")
        level = env
    logformat.configure(level or default)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 state error, 2 invalid input)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command_at = _command_index(argv)
    word = argv[command_at] if command_at < len(argv) else None
    builtins = builtin_commands()
    try:
        # Plugins may add commands (`tickwork web`); a broken plugin is one error line, not a
        # traceback. The process's manager is built from the configuration first, so that a
        # plugin its `[plugins] block` lists is never imported.
        commands = plugin_manager_for(load(_config_option(argv))).commands
    except ConfigError as exc:
        if word not in builtins:
            return _error(exc, EXIT_USAGE)
        commands = builtins  # the command itself reports the configuration's error
    if word is not None and not word.startswith("-") and word not in builtins:
        blocked = _blocked_command(word, argv)
        if blocked is not None:
            return _error(ConfigError(blocked), EXIT_USAGE)
    fixed = _error_status(commands, word)
    try:
        # Inside the try: a command's option may refuse its text as the command's input
        # (`jobs add --args '[1]'`: one line, exit 2); a usage error exits through argparse.
        try:
            args = build_parser(commands).parse_args(argv)
        except SystemExit as exc:
            if fixed is not None and exc.code == EXIT_USAGE:
                raise SystemExit(fixed) from None
            raise
        command = commands.get(args.command)
        _setup_logging(args.log_level, command.default_log_level)
        config = Config() if command.reads_own_config(args) else load(args.config)
        if args.command not in builtins:
            _check_not_blocked(args.command, commands.owner(args.command), config)
        code = command().run(args, config)
        sys.stdout.flush()  # inside the try: a reader that went away surfaces here
        return code
    except (ConfigError, TriggerError, DeclarationError, ExecutorError) as exc:
        return _error(exc, EXIT_USAGE if fixed is None else fixed)
    except TickworkError as exc:  # a state the command cannot act on: unknown name, old schema, ...
        return _error(exc, EXIT_STATE if fixed is None else fixed)
    except BrokenPipeError:
        # `tickwork jobs list | head -1`: the reader is gone, which is not an error. Point stdout
        # at /dev/null so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130


def _error_status(commands: Registry[type[Command]], word: str | None) -> int | None:
    """The status every error of command ``word`` exits with (:attr:`Command.error_status`)."""
    if word is None or word not in commands:
        return None
    return commands.get(word).error_status


def _check_not_blocked(name: str, owner: str, config: Config) -> None:
    """The parser is built before the command's configuration is read: a plugin command whose
    plugin that configuration blocks does not run."""
    if owner in config.blocked_plugins:
        raise ConfigError(
            f"command {name!r} comes from plugin {owner!r}, which [plugins] block lists in "
            f"{config.source or 'the configuration'}"
        )


def _blocked_command(word: str, argv: Sequence[str]) -> str | None:
    """Why ``word`` is no command here when a plugin that ``[plugins] block`` lists provides it
    (found without importing any blocked plugin: the command is the plugin's entry-point name)."""
    try:
        config = load(_config_option(argv))
    except ConfigError:
        return None
    if word not in config.blocked_plugins:
        return None
    return (
        f"command {word!r} comes from plugin {word!r}, which [plugins] block lists in "
        f"{config.source or 'the configuration'}"
    )


def _config_option(argv: Sequence[str]) -> str | None:
    """The ``-c/--config`` value among ``argv`` (global options may follow the command too)."""
    found: str | None = None
    for i, word in enumerate(argv):
        if word in ("-c", "--config") and i + 1 < len(argv):
            found = argv[i + 1]
        elif word.startswith("--config="):
            found = word.partition("=")[2]
        elif word == "--":
            break
    return found


def _command_index(argv: Sequence[str]) -> int:
    """The position of the command word, past any global options before it."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in ("-c", "--config", "--log-level", "--namespace"):
            i += 2
        elif word == "--json" or word.startswith(("--config=", "--log-level=", "--namespace=")):
            i += 1
        else:
            break
    return i


def _error(exc: Exception, code: int) -> int:
    # One line per problem, whatever the underlying message held; after the log lines written so
    # far (a node's are written from a thread of their own).
    for handler in logging.getLogger().handlers:
        handler.flush()
    lines = [*exc.problems, exc.summary] if isinstance(exc, ConfigProblems) else [str(exc)]
    for line in lines:
        text = " ".join(line.split("\n"))
        print(f"tickwork: error: {text}", file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
