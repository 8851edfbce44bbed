"""``tickwork jobs add|update``: their options are a schedule's
(:data:`tickwork.scheduling.options.OPTIONS`), read from text by each option's own parser."""

from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path
from typing import Any

from ...admin.api import Admin
from ...errors import ConfigError, ScheduleExistsError, TickworkError
from ...scheduling import schedulefile
from ...scheduling.options import OPTIONS
from ..argtypes import usage
from .admincommand import AdminCommand, operator
from .executornotes import add_node_check_flag, executor_notes
from .jobs_view import declared_note, said


def _schedule_options(parser: argparse.ArgumentParser, *, update: bool) -> None:
    """One command-line option per schedule option; ``update`` has no defaults (unchanged)."""
    for option in OPTIONS:
        parse = option.text
        if parse is None:  # `enabled`: switches, which differ between add and update
            continue
        if option.same_help:
            text = option.help
        elif update:
            text = f"{option.help} (default: unchanged)"
        else:
            text = f"{option.help} ({option.default_help})" if option.default_help else option.help
        parser.add_argument(
            option.flag,
            dest=option.name,
            # Repeated (--exclude A --exclude B): a list of the values.
            action="append" if option.repeatable else "store",
            # ConfigError (``--args``' JSON) is the command's one-line error, raised while parsing.
            type=usage(parse),
            choices=option.choices,
            metavar=option.metavar,
            help=text,
        )


def _given(args: argparse.Namespace) -> dict[str, Any]:
    """The schedule options given on the command line."""
    return {o.name: getattr(args, o.name) for o in OPTIONS if getattr(args, o.name, None) is not None}


class JobsAdd(AdminCommand):
    help = "add a run-time schedule, or many from a file (--from)"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("name", nargs="?", help="unique schedule name")
        parser.add_argument("expression", nargs="?", help='trigger expression, e.g. "0 2 * * *"')
        parser.add_argument(
            "target", nargs="?", help="what the executor runs: package.module:function for local, a URL for http"
        )
        parser.add_argument(
            "--from",
            dest="from_file",
            metavar="FILE",
            help="add every schedule of FILE in one transaction (JSON lines, or [[schedule]] tables in a .toml "
            "file; fields as the arguments of this command); all or none are added",
        )
        _schedule_options(parser, update=False)
        parser.add_argument("--disabled", dest="enabled", action="store_false", help="create it disabled")
        parser.add_argument("--replace", action="store_true", help="replace a run-time schedule of the same name")
        add_node_check_flag(parser)

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        if args.from_file is not None:
            return self._from_file(args, admin)
        if None in (args.name, args.expression, args.target):
            raise ConfigError("jobs add: give NAME EXPRESSION TARGET, or --from FILE")
        info = admin.add(
            args.name,
            args.expression,
            args.target,
            replace=args.replace,
            check_nodes=args.check_nodes,
            by=operator(),
            **_given(args),
        )
        said("added", info, args.json)
        executor_notes(admin, [info.executor], checked=args.check_nodes)
        return 0

    def _from_file(self, args: argparse.Namespace, admin: Admin) -> int:
        if any(v is not None for v in (args.name, args.expression, args.target)):
            raise ConfigError("jobs add: give either NAME EXPRESSION TARGET or --from FILE, not both")
        path = Path(args.from_file)
        live = admin.live_executors() if args.check_nodes else None  # the live nodes, read once
        entries, specs = schedulefile.load(path, functools.partial(admin.spec, check_nodes=args.check_nodes, live=live))
        try:
            infos = admin.add_many(specs, replace=args.replace, check_nodes=args.check_nodes, live=live, by=operator())
        except ScheduleExistsError as exc:
            lines = {str(e.fields.get("name")): e.line for e in entries}
            if len(exc.names) == 1:
                where = f"{path}:{lines[exc.name]}: a schedule named {exc.name!r} already exists"
            else:
                taken = ", ".join(f"{n!r} (line {lines[n]})" for n in exc.names)
                where = f"{path}: schedules named {taken} already exist"
            raise TickworkError(f"{where}; nothing was added (--replace replaces run-time schedules)") from exc
        if args.json:
            for info in infos:
                print(json.dumps(info.as_json()))
        else:
            print(f"added {len(infos)} schedule{'' if len(infos) == 1 else 's'} from {path}")
        executor_notes(admin, [info.executor for info in infos], checked=args.check_nodes)
        return 0


class JobsUpdate(AdminCommand):
    help = "change some fields of a schedule (the next fire is recomputed for a new trigger)"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("name", help="schedule name")
        parser.add_argument("--expression", metavar="EXPR", help="new trigger expression")
        parser.add_argument("--target", help="new target")
        _schedule_options(parser, update=True)
        state = parser.add_mutually_exclusive_group()
        state.add_argument("--enable", dest="enabled", action="store_const", const=True, help="enable it")
        state.add_argument("--disable", dest="enabled", action="store_const", const=False, help="disable it")
        add_node_check_flag(parser)

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        fields = {k: v for k, v in {"expression": args.expression, "target": args.target}.items() if v is not None}
        fields |= _given(args)
        if not fields:
            raise ConfigError("jobs update: nothing to change; give at least one option (tickwork jobs update --help)")
        info = admin.update(args.name, check_nodes=args.check_nodes, by=operator(), **fields)
        said("updated", info, args.json)
        declared_note(info, "puts the declared definition back")
        executor_notes(admin, [info.executor], checked=args.check_nodes)
        return 0
