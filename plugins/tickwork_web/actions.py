"""The actions, shared by the API and the browser forms, each logged with who and when: run now,
enable, disable and remove on one schedule or on a selection, releasing one schedule's stuck
hand-off (its history row names who released it), and creating or editing one.

The log line goes to the ``tickwork.web.actions`` logger at INFO (``tickwork web`` prints INFO by
default), one per schedule, also for a selection (which is marked ``(selection of N)``), and at
WARNING with the reason when refused, for example::

    action trigger on schedule 'backup' by alice (session 1f2e3d4c) from 10.0.0.7 at 2026-11-24T06:31:02Z: ok
    action disable on schedule 'backup' by alice from 10.0.0.7 at 2026-11-24T06:32:10Z (selection of 3): ok
    action create on schedule 'report' by alice (session 1f2e3d4c) from 10.0.0.7 at 2026-11-24T06:40:00Z: ok
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tickwork.admin import Admin
from tickwork.admin.info import ScheduleInfo
from tickwork.errors import ConfigError, TickworkError
from tickwork.scheduling.localtime import in_zone, local_time, read_when
from tickwork.structures import iso_z

from .forms import ScheduleForm
from .limits import capped, capped_name

log = logging.getLogger("tickwork.web.actions")

ACTIONS = ("trigger", "enable", "disable", "remove")
#: The actions on one schedule: those, and releasing its stuck hand-offs (never a selection's).
ONE_ACTIONS = (*ACTIONS, "release")
#: Why a schedule declared in code is not changed here (the form and the API).
DECLARED = (
    "schedule {name!r} is declared in code ({module}); change the declaration there: "
    "a node start puts the declared definition back"
)
#: Most schedules one selection may name (a page shows at most 200).
MAX_SELECTION = 500


def _now() -> str:
    return iso_z(datetime.now(UTC))


def audit(action: str, name: str, who: str, address: str, refused: str | None = None, note: str = "") -> None:
    """One line of the action log. Every value is capped (:mod:`.limits`): the name, the caller
    and the reason (which often quotes the input) come from the request, and a 64 KiB name must
    not become a 64 KiB line, nor a line break in it a forged line."""
    shown, who, address = capped_name(name), capped(who), capped(address)
    when = _now() + (f" {capped(note)}" if note else "")
    if refused is None:
        log.info("action %s on schedule %s by %s from %s at %s: ok", action, shown, who, address, when)
    else:
        log.warning(
            "action %s on schedule %s by %s from %s at %s refused: %s",
            action,
            shown,
            who,
            address,
            when,
            capped(refused),
        )


def perform(admin: Admin, action: str, name: str, who: str, address: str) -> ScheduleInfo:
    """Do ``action`` on schedule ``name`` and log it (also when it fails, with the reason).

    :raises tickwork.TickworkError: what the admin API raises (unknown name, disabled, ...)
    """
    methods: dict[str, Callable[[str], ScheduleInfo]] = {
        "trigger": admin.trigger,
        "enable": admin.enable,
        "disable": admin.disable,
        "remove": admin.remove,
        "release": lambda name: _release(admin, name, who),
    }
    try:
        info = methods[action](name)
    except Exception as exc:
        audit(action, name, who, address, refused=str(exc))
        raise
    audit(action, name, who, address)
    return info


def _release(admin: Admin, name: str, who: str) -> ScheduleInfo:
    """Release ``name``'s hand-offs no worker started, the history naming ``who``."""
    if not admin.release(name, by=who):
        raise TickworkError(f"nothing to release: {name} has no hand-off waiting for a worker")
    return admin.get(name)


#: The actions of the schedule page that take fields of a form (or of the API's JSON body):
#: each is the admin API's method of the same name, as the CLI calls it.
FORM_ACTIONS = ("pause", "resume", "backfill", "rerun")


def _field(fields: Mapping[str, Any], key: str) -> str:
    value = fields.get(key)
    return "" if value is None else str(value).strip()


def _when(admin: Admin, info: ScheduleInfo, text: str, what: str, *, ahead: bool = False) -> datetime:
    """A time of a form, as the CLI reads it: ISO-8601 (without an offset: in the schedule's
    zone, which a browser's date-time field gives), or a duration (``2h``: from now, by the
    database clock; an age for a backfill's range)."""
    try:
        value = read_when(text)
    except ValueError as exc:
        raise ConfigError(f"{what}: {exc}") from None
    return in_zone(value, info.timezone, admin.store().now(), ahead=ahead)


def perform_form(
    admin: Admin, action: str, name: str, fields: Mapping[str, Any], who: str, address: str
) -> tuple[ScheduleInfo, str]:
    """One of :data:`FORM_ACTIONS` with its fields, logged as :func:`perform` logs: pause (``note``,
    ``until``), resume, backfill (``from``, ``to``: blank is now) and rerun (``run``: the id of
    a failed run; its fire runs again as its next attempt).

    :return: the schedule as it is after, and what was done in words (the page's flash line)
    :raises tickwork.TickworkError: what the admin API raises, or a field it cannot read
    """
    detail = ""
    try:
        if action == "pause":
            info = admin.get(name)
            note, until_text = _field(fields, "note"), _field(fields, "until")
            if not note:
                raise ConfigError("pause: a note saying why is required (it is shown with the schedule)")
            until = _when(admin, info, until_text, "until", ahead=True) if until_text else None
            info = admin.pause(name, note, until=until, by=who)
            ends = (
                "until resumed"
                if info.pause is None or info.pause.until is None
                else "until " + local_time(info.pause.until, info.timezone)
            )
            detail, said = f"(until {iso_z(until)})" if until else "", f"Paused {ends}."
        elif action == "resume":
            info = admin.resume(name)
            said = f"Resumed; next fire {local_time(info.next_fire, info.timezone)}."
        elif action == "backfill":
            info = admin.get(name)
            start = _when(admin, info, _field(fields, "from"), "from")
            end_text = _field(fields, "to")
            end = _when(admin, info, end_text, "to") if end_text else admin.store().now()
            report = admin.backfill(name, start, end, rerun=_field(fields, "rerun") == "1")
            detail = f"(from {iso_z(start)} to {iso_z(end)}: {len(report.queued)} queued)"
            said = (
                f"Backfill queued: {len(report.queued)} of the {len(report.times)} fire times "
                f"({len(report.already)} in the history already)."
            )
        elif action == "rerun":
            run_text = _field(fields, "run")
            if not run_text.isdigit():
                raise ConfigError(f"rerun: run must be a run id, not {run_text!r}")
            report = admin.rerun(name, int(run_text))
            info = admin.get(name)
            detail = f"(run {run_text})"
            said = f"Fire {local_time(report.times[0], info.timezone)} queued to run again."
        else:
            raise ConfigError(f"no such action {action!r}; actions: {', '.join(FORM_ACTIONS)}")
    except Exception as exc:
        audit(action, name, who, address, refused=str(exc), note=detail)
        raise
    audit(action, name, who, address, note=detail)
    return info, said


@dataclass
class Outcome:
    """What an action on a selection did: the names done, and the refused ones with why."""

    done: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)


def perform_many(admin: Admin, action: str, names: Sequence[str], who: str, address: str) -> Outcome:
    """``action`` on every named schedule. Enable, disable and remove go through the admin API's
    ``*_many`` (one transaction: all or none, so a stale selection changes nothing); run now is
    per schedule (a disabled one is refused, the others still run)."""
    unique = list(dict.fromkeys(names))
    note = f"(selection of {len(unique)})"
    outcome = Outcome()
    if action == "trigger":
        for name in unique:
            try:
                admin.trigger(name)
            except TickworkError as exc:
                outcome.refused.append((name, str(exc)))
                audit(action, name, who, address, refused=str(exc), note=note)
            else:
                outcome.done.append(name)
                audit(action, name, who, address, note=note)
        return outcome
    many: dict[str, Callable[[list[str]], Any]] = {
        "enable": admin.enable_many,
        "disable": admin.disable_many,
        "remove": admin.remove_many,
    }
    try:
        many[action](unique)
    except TickworkError as exc:
        for name in unique:
            audit(action, name, who, address, refused=str(exc), note=note)
        outcome.refused = [(name, str(exc)) for name in unique]
        return outcome
    for name in unique:
        audit(action, name, who, address, note=note)
    outcome.done = unique
    return outcome


def save(admin: Admin, form: ScheduleForm, who: str, address: str, *, creating: bool) -> ScheduleInfo | None:
    """Create or update the schedule of ``form`` and log it; ``None`` when the form has errors
    (an invalid form is logged as refused too: someone tried to change the schedule)."""
    action = "create" if creating else "edit"
    info = form.save(admin, creating=creating, by=who)
    if info is None:
        reasons = [form.error] if form.error else [f"{k}: {v}" for k, v in form.errors.items()]
        audit(action, form.name or "-", who, address, refused="; ".join(r for r in reasons if r))
        return None
    audit(action, info.name, who, address)
    return info
