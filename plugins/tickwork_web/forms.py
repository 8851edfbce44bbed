"""The create and edit form of a schedule. Its fields are the schedule options
(:data:`tickwork.scheduling.options.OPTIONS`, read with the same text converters as
``tickwork jobs add``), and everything is validated by the admin API (:meth:`tickwork.Admin.spec`),
never by rules of its own: the form shows the admin API's message next to the field it names.

A blank option means its default (for ``kind``, ``executor`` and ``misfire``: recognised from
the expression or taken from the configuration), on create and on edit alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tickwork.admin import Admin
from tickwork.admin.info import ScheduleInfo
from tickwork.errors import ScheduleExistsError, ScheduleNotFoundError, TickworkError, TriggerError
from tickwork.scheduling.options import OPTIONS, Option, of_spec
from tickwork.scheduling.triggers import detect_kind, get_trigger
from tickwork.structures import ScheduleSpec

from .limits import deep_message, too_deep

#: Fire times the preview lists.
PREVIEW = 10
#: The options the form shows as text or a choice (``enabled`` is a checkbox of its own).
TEXT_OPTIONS: tuple[Option, ...] = tuple(o for o in OPTIONS if o.text is not None)
#: Every option's label in words; the form shows its key (``retry_backoff``, what ``jobs add``,
#: the schedule file and the decorators call it) beside it as a hint.
LABELS = {
    "kind": "Trigger kind",
    "tz": "Time zone",
    "executor": "Executor",
    "args": "Arguments (JSON object)",
    "timeout": "Timeout (seconds)",
    "retries": "Retries",
    "retry_backoff": "Wait before the first retry (seconds)",
    "misfire": "Missed fire times",
    "pause_after_failures": "Pause after this many failures in a row",
    "jitter": "Random delay of each fire (up to)",
    "start_at": "First fire no earlier than",
    "end_at": "Last fire no later than",
    "misfire_grace": "How late a fire may still run (seconds)",
    "max_catchup": "Most missed fires replayed",
    "max_runs": "End after this many runs",
    "on_finish": "Once it has ended",
    "on_abandon": "A run lost with its node",
    "also": "Also fire at",
    "exclude": "Never fire at",
    "overlap": "A fire due while the previous run is active",
    "max_concurrent": "Most runs at once",
    "concurrency_key": "Concurrency group",
    "concurrency_limit": "Most runs of the group at once",
}
#: The form's sections, each with the options it holds, in order: when it fires, what it runs,
#: the limits of its runs, and what happens when it fails. An option in none of them (one added
#: later) is shown under "More options", so the form never hides one.
GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "When",
        "when it fires",
        ("kind", "tz", "also", "exclude", "start_at", "end_at", "jitter", "misfire", "misfire_grace", "max_catchup"),
    ),
    ("What", "what it runs, and where", ("executor", "args")),
    (
        "Limits",
        "how long, how often and how many at once",
        (
            "timeout",
            "retries",
            "retry_backoff",
            "overlap",
            "max_concurrent",
            "concurrency_key",
            "concurrency_limit",
            "max_runs",
            "on_finish",
            "on_abandon",
        ),
    ),
    ("Alerts", "when it fails", ("pause_after_failures",)),
)


def grouped(options: tuple[Option, ...] = ()) -> list[tuple[str, str, list[Option]]]:
    """The form's sections with their options (``options``: the form's, by default
    :data:`TEXT_OPTIONS`); the ones no section names come last, under "More options"."""
    chosen = options or TEXT_OPTIONS
    by_name = {o.name: o for o in chosen}
    out = [(title, about, [by_name[n] for n in names if n in by_name]) for title, about, names in GROUPS]
    placed = {n for _, _, names in GROUPS for n in names}
    rest = [o for o in chosen if o.name not in placed]
    if rest:
        out.append(("More options", "", rest))
    return out


def label(option: Option) -> str:
    """The option's label in words (its key, made readable, for one :data:`LABELS` lacks)."""
    return LABELS.get(option.name, option.name.replace("_", " ").capitalize())


#: The options whose text is a JSON document (its nesting is limited: :func:`.limits.too_deep`).
JSON_OPTIONS = frozenset({"args"})
#: Between the values of an option given several times (``also``, ``exclude``) in its one field.
REPEAT_SEPARATOR = "; "


def _shown(option: Option, value: Any) -> str:
    """A stored option value as the form's text."""
    if value is None:
        return ""
    if isinstance(value, timedelta):
        return f"{value.total_seconds():g}"
    if isinstance(value, Mapping):
        return json.dumps(dict(value)) if value else ""
    if option.repeatable:
        # Several expressions in one field: no trigger syntax uses a semicolon.
        return REPEAT_SEPARATOR.join(value)
    return str(getattr(value, "value", value))


@dataclass
class ScheduleForm:
    """The form's text as posted (or as stored, for an edit), its errors and its preview."""

    name: str = ""
    expression: str = ""
    target: str = ""
    options: dict[str, str] = field(default_factory=dict)
    enabled: bool = True
    errors: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    preview: list[datetime] = field(default_factory=list)
    spec: ScheduleSpec | None = None
    now: datetime | None = None  # the database's, when the preview was computed

    @classmethod
    def posted(cls, form: Mapping[str, Any], name: str | None = None) -> ScheduleForm:
        """The posted fields; ``name``: the schedule being edited (its name is not a field)."""
        text = {k: str(form.get(k, "")).strip() for k in ("name", "expression", "target")}
        return cls(
            name=name if name is not None else text["name"],
            expression=text["expression"],
            target=text["target"],
            options={o.name: str(form.get(o.name, "")).strip() for o in TEXT_OPTIONS},
            enabled=form.get("enabled") is not None,
        )

    @classmethod
    def of(cls, info: ScheduleInfo, admin: Admin) -> ScheduleForm:
        """The stored schedule as the form's text. The kind is left blank when the expression
        is recognised as that kind anyway, so changing the expression to another kind just works."""
        stored = of_spec(info.spec)
        options = {o.name: _shown(o, stored.get(o.name)) for o in TEXT_OPTIONS}
        try:
            if detect_kind(info.expression, admin.manager) == info.kind:
                options["kind"] = ""
        except TriggerError:
            pass
        return cls(
            name=info.name, expression=info.expression, target=info.target, options=options, enabled=info.enabled
        )

    @property
    def valid(self) -> bool:
        return not self.errors and self.error is None

    def values(self) -> dict[str, Any]:
        """The options converted as ``jobs add`` converts its flags; a bad one is a field error."""
        out: dict[str, Any] = {"enabled": self.enabled}
        for option in TEXT_OPTIONS:
            raw = self.options.get(option.name, "")
            if not raw:
                out[option.name] = None  # the default
                continue
            if option.name in JSON_OPTIONS and too_deep(raw):
                # Before the converter's json.loads, which fails with a RecursionError (a 500)
                # around 1,000 levels; the limit keeps every later walk of the value
                # (validation, storing it as JSON, showing it) far from that.
                self.errors[option.name] = deep_message()
                continue
            try:
                if option.repeatable and option.text:
                    text = option.text
                    out[option.name] = [text(part.strip()) for part in raw.split(";") if part.strip()]
                else:
                    out[option.name] = option.text(raw) if option.text else raw
            except (ValueError, TickworkError) as exc:
                # The converters name the command-line flag (--args: ...); the form names the field.
                self.errors[option.name] = str(exc).removeprefix(option.flag + ": ")
        return out

    def check(self, admin: Admin, *, creating: bool) -> dict[str, Any]:
        """Validate through the admin API; fills :attr:`errors`/:attr:`error`, :attr:`spec` and
        the :attr:`preview` of the next fire times. Returns the converted options."""
        for key in (("name",) if creating else ()) + ("expression", "target"):
            if not getattr(self, key):
                self.errors[key] = "required"
        options = self.values()
        if creating and self.name and _exists(admin, self.name):
            self.errors["name"] = str(ScheduleExistsError(self.name))
        if self.errors:
            return options
        try:
            self.spec = admin.spec(self.name, self.expression, self.target, **options)
        except TriggerError as exc:
            self.errors["expression"] = str(exc)
        except TickworkError as exc:  # ConfigError, ExecutorError: the message names the field
            self.error = str(exc)
        if self.spec is not None:
            self.now = admin.store().now()
            self.preview = preview(admin, self.spec, self.now)
        return options

    def save(self, admin: Admin, *, creating: bool, by: str | None = None) -> ScheduleInfo | None:
        """Check, then create or update the schedule (its version written ``by`` whom); ``None``
        (with the errors set) if refused."""
        options = self.check(admin, creating=creating)
        if not self.valid:
            return None
        try:
            if creating:
                return admin.add(self.name, self.expression, self.target, by=by, **options)
            return admin.update(self.name, expression=self.expression, target=self.target, by=by, **options)
        except ScheduleExistsError as exc:
            self.errors["name"] = str(exc)
        except TriggerError as exc:
            self.errors["expression"] = str(exc)
        except TickworkError as exc:
            self.error = str(exc)
        return None


def _exists(admin: Admin, name: str) -> bool:
    try:
        admin.get(name)
    except ScheduleNotFoundError:
        return False
    return True


def preview(admin: Admin, spec: ScheduleSpec, now: datetime, n: int = PREVIEW) -> list[datetime]:
    """The next ``n`` fire times of ``spec`` after ``now`` (the database's; aware UTC)."""
    trigger = get_trigger(spec.trigger_kind, spec.expression, spec.timezone, admin.manager)
    out: list[datetime] = []
    current = trigger.next_after(now)
    while current is not None and len(out) < n:
        out.append(current)
        current = trigger.next_after(current)
    return out


def kinds(admin: Admin) -> list[str]:
    """The registered trigger kinds, for the kind choice."""
    return list(admin.manager.triggers.names())
