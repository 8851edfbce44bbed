"""``tickwork apply FILE... [--plan] [--prune]``: schedules kept in files, made so in the store in
one transaction (docs/schedules-in-git.md). ``--plan`` exits as ``terraform plan
-detailed-exitcode`` does: 0 nothing to do, 2 changes (drift included), 1 an error."""

from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path

from ...admin.api import Admin
from ...config.files import Config
from ...errors import ConfigError
from ...scheduling import schedulefile
from ...scheduling.applyplan import ApplyPlan, Drift
from ...structures import ScheduleSpec
from ..exitcodes import EXIT_STATE
from ..parser import namespace_of
from .admincommand import AdminCommand, operator
from .executornotes import add_node_check_flag, executor_notes
from .jobs_versions import change_lines, value_text
from .workdir import import_from_working_directory

#: ``apply --plan``'s status when applying would write something.
EXIT_CHANGES = 2


class ApplyCommand(AdminCommand):
    help = "make the run-time schedules what files say, in one transaction (--plan: show it, exit 2 on changes)"
    description = (
        "Make the run-time schedules what FILE... say (the files jobs add --from reads: JSON lines, or "
        "[[schedule]] tables in .toml files), in one transaction: all or nothing. Schedules declared in code are "
        "left alone. --plan writes nothing and exits 0 when there is nothing to do, 2 when there are changes or "
        "drift (a schedule changed since the last apply by something else), 1 on an error. See "
        "docs/schedules-in-git.md."
    )
    error_status = EXIT_STATE

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("files", nargs="+", metavar="FILE", help="schedule file(s), as jobs add --from reads")
        parser.add_argument("--plan", action="store_true", help="show what would change; write nothing")
        parser.add_argument(
            "--prune", action="store_true", help="also remove the run-time schedules that no file names"
        )
        add_node_check_flag(parser)

    def run(self, args: argparse.Namespace, config: Config) -> int:
        import_from_working_directory()  # targets are checked by importing them
        return super().run(args, config)

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        namespace = namespace_of(args)
        live = admin.live_executors() if args.check_nodes else None  # the live nodes, read once
        build = functools.partial(admin.spec, check_nodes=args.check_nodes, live=live)
        specs = read_files([Path(f) for f in args.files], build)
        if args.plan:
            plan = admin.plan(specs, prune=args.prune, namespace=namespace, check_nodes=args.check_nodes, live=live)
        else:
            plan = admin.apply(
                specs, prune=args.prune, namespace=namespace, check_nodes=args.check_nodes, live=live, by=operator()
            )
        if args.json:
            print(json.dumps({**plan.as_json(), "applied": not args.plan}))
        else:
            for line in plan_lines(plan):
                print(line)
            print(summary(plan, applied=not args.plan))
        if not args.plan:
            executor_notes(admin, sorted({s.executor for s in plan.add}), checked=args.check_nodes)
            return 0
        return EXIT_CHANGES if plan.pending else 0


def read_files(paths: list[Path], build: functools.partial[ScheduleSpec]) -> list[ScheduleSpec]:
    """The schedules of every file, each validated; a name in two files is an error naming both.

    :raises tickwork.errors.ConfigError: every problem of a file (``FILE:LINE: ...``), or a name
        given by two files
    """
    specs: list[ScheduleSpec] = []
    where: dict[str, str] = {}
    for path in paths:
        entries, found = schedulefile.load(path, build)
        lines = {str(e.fields.get("name")): e.line for e in entries}
        for spec in found:
            here = f"{path}:{lines.get(spec.name, 1)}"
            if spec.name in where:
                raise ConfigError(
                    f"{here}: schedule name {spec.name!r} is also in {where[spec.name]}; nothing was applied"
                )
            where[spec.name] = here
            specs.append(spec)
    return specs


def plan_lines(plan: ApplyPlan) -> list[str]:
    """The plan for people, one schedule a block: ``+`` to add, ``~`` to change (each field
    ``old -> new``), ``-`` to remove, ``=`` recorded as applied or left alone; under a schedule
    changed since the last apply by something else, ``!`` its drift: who, when, what."""
    out: list[str] = []
    drift = {d.name: d for d in plan.drift}
    for spec in plan.add:
        state = "" if spec.enabled else " (disabled)"
        out.append(f"+ {spec.name}: add {spec.expression!r} -> {spec.target}{state}")
    for change in plan.change:
        how = "next fire recomputed" if change.retrigger else "next fire kept"
        out.append(f"~ {change.name}: change ({how})")
        out += [f"    {field}: {value_text(c['old'])} -> {value_text(c['new'])}" for field, c in change.fields.items()]
        out += _drift_lines(drift.get(change.name))
    for name in plan.remove:
        out.append(f"- {name}: remove (no file names it; --prune)")
        out += _drift_lines(drift.get(name))
    for name in plan.adopt:
        why = "drifted to what the files say" if name in drift else "never applied"
        out.append(f"= {name}: as the files say ({why}); recorded as applied")
        out += _drift_lines(drift.get(name))
    for name, module in plan.declared:
        out.append(f"= {name}: declared in code ({module}); apply leaves it alone")
    out += [f"note: {note}" for note in plan.notes]
    return out


def _drift_lines(found: Drift | None) -> list[str]:
    if found is None:
        return []
    out = [f"  ! drift: changed since the last apply (version {found.applied_version}) by {found.who()}"]
    for version in found.versions:
        out += [f"      version {version.version}: {line}" for line in change_lines(version)]
    return out


def summary(plan: ApplyPlan, *, applied: bool) -> str:
    counts = plan.counts()
    where = f" (namespace {plan.namespace})"
    if not plan.pending:
        return f"nothing to do{where}: {counts['unchanged']} unchanged, {counts['declared']} declared in code"
    done = (
        ("added", "changed", "removed", "recorded as applied")
        if applied
        else (
            "to add",
            "to change",
            "to remove",
            "to record as applied",
        )
    )
    parts = [f"{counts[key]} {word}" for key, word in zip(("add", "change", "remove", "adopt"), done, strict=True)]
    drifted = f"; {counts['drift']} drifted since the last apply" if counts["drift"] else ""
    return f"{'applied' if applied else 'plan'}{where}: {', '.join(parts)}{drifted}"
