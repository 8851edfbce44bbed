"""A schedule's options, declared once: their names, defaults, how each is read from a Python,
TOML or JSON value and from command-line text, how each is written as JSON and shown to a person,
and their help.

A schedule is its name, expression and target plus these options. The decorators
(``@tickwork.cron(..., retries=2)``), :meth:`tickwork.Admin.add` and :meth:`~tickwork.Admin.update`,
``tickwork jobs add|update`` and the schedule files of ``jobs add --from`` all read them from
:data:`OPTIONS`; a new option is one more entry there (and a :class:`~tickwork.ScheduleSpec` field).
The rarer options (:data:`STORED`) are also stored, listed and shown from there: the stores'
``options`` column (:func:`stored_json`, :func:`stored_fields`), the admin API's JSON
(:func:`spec_json`: ``jobs list|show --json``, the dashboard's JSON API), ``tickwork jobs show``
and the dashboard's schedule page (:func:`shown`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from datetime import datetime, timedelta
from typing import Any, Protocol, TypedDict

from ..config.calendars import country_definition
from ..errors import ConfigError
from ..structures import (
    OPTION_FIELDS,
    Choice,
    MisfirePolicy,
    OnAbandon,
    OnFinish,
    OnHoliday,
    Overlap,
    ScheduleSpec,
    iso_z,
    parse_iso,
)
from .durations import duration, seconds_in
from .firetimes import jitter_offset

#: The :class:`ScheduleSpec` defaults: the options' defaults are written there, once.
_SPEC_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(ScheduleSpec) if f.default is not MISSING}


def _as_is(where: str, value: object) -> object:
    """Checked by :class:`ScheduleSpec` (strings, counts) or by the trigger and executor plugins."""
    return value


def _arguments(where: str, value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: must be a mapping of argument names to values, got {type(value).__name__}")
    return dict(value)


def _misfire(where: str, value: object) -> MisfirePolicy | None:
    # MisfirePolicy's own error lists the choices; it is kept word for word.
    return None if value is None else MisfirePolicy(str(value))


def _choice(kind: type[Choice]) -> Callable[[str, object], Choice]:
    """A member of ``kind`` from itself or its text; the error lists the choices as
    :class:`ScheduleSpec`'s does (:meth:`~tickwork.structures.Choice.of`)."""

    def convert(where: str, value: object) -> Choice:
        try:
            return kind.of(where, value)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    return convert


def _moment(where: str, value: object) -> datetime:
    """A time: an aware :class:`~datetime.datetime` or ISO 8601 text (UTC without an offset, as
    everywhere in tickwork; a naive datetime is refused like anywhere else)."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return parse_iso(value)
        except ValueError:
            raise ConfigError(f"{where}: not an ISO 8601 time such as 2026-12-01T09:00:00Z: {value!r}") from None
    raise ConfigError(f"{where}: expected an ISO 8601 time or a datetime, got {type(value).__name__} {value!r}")


def _iso_text(text: str) -> datetime:
    try:
        return parse_iso(text)
    except ValueError:
        raise ValueError(f"not an ISO 8601 time such as 2026-12-01T09:00:00Z: {text!r}") from None


def _expressions(where: str, value: object) -> tuple[str, ...]:
    """Trigger expressions: a list of strings (one string is a list of one)."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{where}: expected a list of expressions (strings), got {type(value).__name__} {value!r}")


def _expression_text(text: str) -> str:
    if not text.strip():
        raise ValueError("an empty expression")
    return text


def _json_object(text: str) -> dict[str, Any]:
    """``--args``: a JSON object. Refused as the command's input (one line, exit 2), not as a usage
    error: a JSON document is data, like a schedule file's."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--args: not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ConfigError("--args: must be a JSON object")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"not an integer: {text!r}") from None
    if value < 0:
        raise ValueError(f"must be >= 0, got {value}")
    return value


def _seconds(positive: bool) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = seconds_in(text)
        if positive and not (value > 0 and math.isfinite(value)):
            raise ValueError(f"must be a positive number of seconds, got {text}")
        if not positive and not 0 <= value < math.inf:
            raise ValueError(f"must be >= 0 seconds, got {text}")
        return value

    return parse


#: ``tickwork run --for`` and ``jobs add --timeout``: more than zero seconds.
positive_seconds = _seconds(positive=True)
#: ``jobs add --retry-backoff``: zero seconds or more.
non_negative_seconds = _seconds(positive=False)


# How each value is written as JSON (its reader is the option's ``convert``: JSON out and back
# gives the same value). ``None`` is ``null`` for every option (:meth:`Option.dump`).


def _json_plain(value: Any) -> Any:
    """Numbers, text, booleans: as they are."""
    return value


def _json_mapping(value: Mapping[str, Any]) -> dict[str, Any]:
    return dict(value)


def _json_seconds(value: timedelta) -> float:
    return value.total_seconds()


def _json_time(value: datetime) -> str:
    return iso_z(value)


def _json_list(value: Sequence[str]) -> list[str]:
    return list(value)


def _json_choice(value: Choice) -> str:
    return value.value


class Described(Protocol):
    """What an option's display reads: the schedule's spec and its counts
    (:class:`tickwork.admin.info.ScheduleInfo` is one)."""

    @property
    def spec(self) -> ScheduleSpec: ...

    @property
    def run_count(self) -> int: ...

    @property
    def failures(self) -> int: ...


@dataclass(frozen=True)
class Shown:
    """One option as a person reads it, on ``tickwork jobs show`` and on the dashboard's page of
    the schedule (each lays it out its own way: ``label: value (note)``, or the note below).

    :param label: what the option is, in lower case (``misfire grace``)
    :param value: its value as words, a time (each surface writes times its way) or expressions
        (listed)
    :param note: what it means for this schedule (``now 2``), or ``""``
    """

    label: str
    value: str | datetime | tuple[str, ...]
    note: str = ""

    def line(self) -> str:
        """The value and the note as one line of text (``jobs show``)."""
        value = self.value
        if isinstance(value, datetime):
            text = iso_z(value)
        elif isinstance(value, tuple):
            text = "; ".join(value)
        else:
            text = value
        return f"{text} ({self.note})" if self.note else text


def _secs(value: timedelta) -> str:
    return f"{value.total_seconds():g}s"


def _show_pause_after(d: Described) -> Shown | None:
    count = d.spec.pause_after_failures
    return None if count is None else Shown("pause after", f"{count} failed fires in a row", f"now {d.failures}")


def _show_jitter(d: Described) -> Shown | None:
    if not d.spec.jitter:
        return None
    offset = jitter_offset(d.spec.name, d.spec.jitter).total_seconds()
    return Shown("jitter", _secs(d.spec.jitter), f"this schedule's offset: +{offset:.3f} s on every fire")


def _show_start(d: Described) -> Shown | None:
    return None if d.spec.start_at is None else Shown("starts", d.spec.start_at)


def _show_end(d: Described) -> Shown | None:
    return None if d.spec.end_at is None else Shown("ends", d.spec.end_at)


def _show_grace(d: Described) -> Shown | None:
    grace = d.spec.misfire_grace
    return None if grace is None else Shown("misfire grace", _secs(grace))


def _show_catchup(d: Described) -> Shown | None:
    count = d.spec.max_catchup
    return None if count is None else Shown("max catch-up", f"{count} missed fires")


def _show_max_runs(d: Described) -> Shown | None:
    spec = d.spec
    if spec.max_runs is None:
        return None
    return Shown("max runs", f"{spec.max_runs}, then {spec.on_finish.value}", f"ran {d.run_count}")


def _show_on_abandon(d: Described) -> Shown | None:
    if not d.spec.on_abandon.reruns:
        return None
    return Shown("on abandon", d.spec.on_abandon.value, "a fire abandoned with its node runs again")


def _show_also(d: Described) -> Shown | None:
    return Shown("also at", d.spec.also) if d.spec.also else None


def _show_exclude(d: Described) -> Shown | None:
    return Shown("except", d.spec.exclude) if d.spec.exclude else None


def _calendar(where: str, value: object) -> str:
    """A calendar: a country spec is checked against the ``holidays`` package now (declaration
    or add time); a ``[calendars.NAME]`` name when the schedule is checked against its
    configuration (:class:`~tickwork.scheduling.validation.SpecBuilder`) or its fire times are
    computed."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: expected a calendar such as 'DE-BE' or a [calendars.NAME] name, got {value!r}")
    country_definition(where, value)
    return value


def _show_holidays(d: Described) -> Shown | None:
    calendar = d.spec.holidays
    if calendar is None:
        return None
    policy = d.spec.on_holiday
    meaning = {
        OnHoliday.SKIP: "a fire on a day off is skipped",
        OnHoliday.NEXT: "a fire on a day off moves to the next business day",
        OnHoliday.PREVIOUS: "a fire on a day off moves to the previous business day",
    }[policy]
    return Shown("holidays", f"{calendar}, on holiday {policy.value}", meaning)


def _show_overlap(d: Described) -> Shown | None:
    spec = d.spec
    if spec.overlap is Overlap.SKIP:  # the default, not listed
        return None
    if not spec.overlap.runs_beside:
        return Shown("overlap", spec.overlap.value)
    bound = "no bound" if spec.max_concurrent is None else f"at most {spec.max_concurrent} at once"
    return Shown("overlap", spec.overlap.value, f"{bound}; not retried")


def _show_concurrency(d: Described) -> Shown | None:
    key = d.spec.concurrency_key
    return None if key is None else Shown("concurrency", f"key {key}, at most {d.spec.concurrency_limit or 1} at once")


@dataclass(frozen=True)
class Option:
    """One option of a schedule.

    :param name: the keyword (decorators, ``Admin.add``), the schedule file's field and, with
        dashes, the command-line option (``retry_backoff``: ``--retry-backoff``)
    :param field: the :class:`ScheduleSpec` field it sets
    :param default: its value when not given; ``None`` where the configuration decides
    :param convert: ``(name, value) -> field value`` for a Python, TOML or JSON value; raises
        :class:`~tickwork.errors.ConfigError` naming the option
    :param text: command-line text -> value; a :class:`ValueError` is a usage error
    :param help: the command-line help; ``default_help`` is added for ``jobs add``
        (``jobs update`` says "default: unchanged" instead, unless ``same_help``)
    :param in_code: whether the decorators take it (``kind`` is the decorator; a declared job
        takes no arguments)
    :param aliases: other keywords accepted for it (``timezone``, the decorators' first spelling)
    :param to_json: field value -> its JSON value (``None`` aside: :meth:`dump`); ``convert``
        reads it back (:meth:`load`)
    :param show: the option as a person reads it (:class:`Shown`), ``None`` when it is at its
        default; for the options of :data:`STORED`
    :param shown_with: the option whose ``show`` shows this one too (``max_concurrent`` with
        ``overlap``), for a stored option without a ``show`` of its own
    """

    name: str
    field: str
    default: Any
    convert: Callable[[str, object], Any]
    text: Callable[[str], Any] | None
    help: str
    default_help: str = ""
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    same_help: bool = False
    in_code: bool = True
    aliases: tuple[str, ...] = ()
    #: Given several times on the command line (``--exclude A --exclude B``): a list.
    repeatable: bool = False
    to_json: Callable[[Any], Any] = _json_plain
    show: Callable[[Described], Shown | None] | None = None
    shown_with: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def dump(self, value: Any) -> Any:
        """The field's ``value`` as JSON (``None``: ``null``)."""
        return None if value is None else self.to_json(value)

    def load(self, value: object) -> Any:
        """The field's value from JSON as :meth:`dump` wrote it (``null``: the default).

        :raises tickwork.errors.ConfigError: naming the option
        """
        if value is None:
            value = self.default
        return None if value is None else self.convert(self.name, value)


OPTIONS: tuple[Option, ...] = (
    Option(
        "kind",
        "trigger_kind",
        None,
        _as_is,
        str,
        "trigger kind: cron, calendar, interval, once (default: recognised from the expression)",
        same_help=True,
        in_code=False,
    ),
    Option(
        "tz",
        "timezone",
        _SPEC_DEFAULTS["timezone"],
        _as_is,
        str,
        "IANA time zone of the expression",
        f"default {_SPEC_DEFAULTS['timezone']}",
        metavar="ZONE",
        aliases=("timezone",),
    ),
    Option(
        "executor",
        "executor",
        None,
        _as_is,
        str,
        "executor that runs the target",
        "default: scheduler.default_executor",
        metavar="NAME",
    ),
    Option(
        "args",
        "arguments",
        {},
        _arguments,
        _json_object,
        "JSON object of keyword arguments for the target",
        metavar="JSON",
        in_code=False,
        to_json=_json_mapping,
    ),
    Option(
        "timeout",
        "timeout",
        _SPEC_DEFAULTS["timeout"],
        duration,
        positive_seconds,
        "soft timeout of a run",
        f"default {_SPEC_DEFAULTS['timeout'].total_seconds():g}",
        metavar="SECONDS",
        to_json=_json_seconds,
    ),
    Option(
        "retries",
        "retries",
        _SPEC_DEFAULTS["retries"],
        _as_is,
        _count,
        "retries of a failed run",
        f"default {_SPEC_DEFAULTS['retries']}",
        metavar="N",
    ),
    Option(
        "retry_backoff",
        "retry_backoff",
        _SPEC_DEFAULTS["retry_backoff"],
        duration,
        non_negative_seconds,
        "wait before the first retry, doubled after each",
        f"default {_SPEC_DEFAULTS['retry_backoff'].total_seconds():g}",
        metavar="SECONDS",
        to_json=_json_seconds,
    ),
    Option(
        "misfire",
        "misfire",
        None,
        _misfire,
        str,
        "what to do with missed fire times",
        "default: scheduler.misfire",
        choices=MisfirePolicy.choices(),
        to_json=_json_choice,
    ),
    # On the command line a pair of switches (jobs add --disabled, jobs update --enable|--disable).
    Option("enabled", "enabled", _SPEC_DEFAULTS["enabled"], _as_is, None, "whether it fires at all"),
    # The rarer options (docs/triggers.md#schedule-options), stored together in one column.
    Option(
        "pause_after_failures",
        "pause_after_failures",
        None,
        _as_is,
        _count,
        "pause it after N consecutive failed fires (each after its retries)",
        "default: never",
        metavar="N",
        show=_show_pause_after,
    ),
    Option(
        "jitter",
        "jitter",
        _SPEC_DEFAULTS["jitter"],
        duration,
        non_negative_seconds,
        "move every fire later by a fixed offset in [0, jitter) taken from the name",
        "default 0",
        metavar="SECONDS",
        to_json=_json_seconds,
        show=_show_jitter,
    ),
    Option(
        "start_at",
        "start_at",
        None,
        _moment,
        _iso_text,
        "no fire before this time",
        metavar="TIME",
        to_json=_json_time,
        show=_show_start,
    ),
    Option(
        "end_at",
        "end_at",
        None,
        _moment,
        _iso_text,
        "no fire after this time",
        metavar="TIME",
        to_json=_json_time,
        show=_show_end,
    ),
    Option(
        "misfire_grace",
        "misfire_grace",
        None,
        duration,
        non_negative_seconds,
        "seconds a fire may be late and still run",
        "default: scheduler.misfire_grace",
        metavar="SECONDS",
        to_json=_json_seconds,
        show=_show_grace,
    ),
    Option(
        "max_catchup",
        "max_catchup",
        None,
        _as_is,
        _count,
        "with misfire policy all: the most missed fires replayed",
        "default: no cap",
        metavar="N",
        show=_show_catchup,
    ),
    Option(
        "max_runs",
        "max_runs",
        None,
        _as_is,
        _count,
        "end after N fires that ran (succeeded, failed or timed out)",
        "default: no end",
        metavar="N",
        show=_show_max_runs,
    ),
    Option(
        "on_finish",
        "on_finish",
        _SPEC_DEFAULTS["on_finish"],
        _choice(OnFinish),
        str,
        "what becomes of it after max_runs: keep (shown finished) or remove",
        f"default {_SPEC_DEFAULTS['on_finish']}",
        choices=OnFinish.choices(),
        to_json=_json_choice,
        shown_with="max_runs",
    ),
    # on_abandon (issue #33, item 7): a fire abandoned with its node, run again or not.
    Option(
        "on_abandon",
        "on_abandon",
        _SPEC_DEFAULTS["on_abandon"],
        _choice(OnAbandon),
        str,
        "a fire abandoned because its node died mid-run: skip it or rerun it (a further attempt, inside the grace)",
        f"default {_SPEC_DEFAULTS['on_abandon']}",
        choices=OnAbandon.choices(),
        to_json=_json_choice,
        show=_show_on_abandon,
    ),
    Option(
        "also",
        "also",
        (),
        _expressions,
        _expression_text,
        "a further trigger expression (repeat the option for several): fires at any of them",
        metavar="EXPRESSION",
        repeatable=True,
        to_json=_json_list,
        show=_show_also,
    ),
    Option(
        "exclude",
        "exclude",
        (),
        _expressions,
        _expression_text,
        "times that do not fire, e.g. '*-12-25' or 'Sat,Sun' (repeat the option for several)",
        metavar="EXPRESSION",
        repeatable=True,
        to_json=_json_list,
        show=_show_exclude,
    ),
    # Concurrency (docs/triggers.md#overlap): how many runs may go on at once, across the cluster.
    Option(
        "overlap",
        "overlap",
        _SPEC_DEFAULTS["overlap"],
        _choice(Overlap),
        str,
        "a fire due while the previous run is active: skip it, buffer_one / buffer_all wait for "
        "the run's end, cancel_other stops the run, allow runs it alongside (see --max-concurrent)",
        f"default {_SPEC_DEFAULTS['overlap']}",
        choices=Overlap.choices(),
        to_json=_json_choice,
        show=_show_overlap,
    ),
    Option(
        "max_concurrent",
        "max_concurrent",
        None,
        _as_is,
        _count,
        "with overlap allow: the most runs of this schedule at once across the cluster",
        "default: no bound",
        metavar="N",
        shown_with="overlap",
    ),
    Option(
        "concurrency_key",
        "concurrency_key",
        None,
        _as_is,
        str,
        "a name shared by several schedules: at most --concurrency-limit runs of them at once",
        "default: none",
        metavar="KEY",
        show=_show_concurrency,
    ),
    Option(
        "concurrency_limit",
        "concurrency_limit",
        None,
        _as_is,
        _count,
        "with a concurrency key: the most runs carrying it at once across the cluster",
        "default 1",
        metavar="N",
        shown_with="concurrency_key",
    ),
    # Business days (issue #44; docs/holidays.md): needs the tickwork[holidays] extra.
    Option(
        "holidays",
        "holidays",
        None,
        _calendar,
        str,
        "a business-day calendar: a country and subdivision of the holidays package (DE, DE-BE, US-NY) "
        "or a [calendars.NAME] table; see --on-holiday",
        "default: none",
        metavar="CALENDAR",
        show=_show_holidays,
    ),
    Option(
        "on_holiday",
        "on_holiday",
        _SPEC_DEFAULTS["on_holiday"],
        _choice(OnHoliday),
        str,
        "a fire on a holiday or non-workday of --holidays: skip it, or move it to the next or previous "
        "business day at the same local time",
        f"default {_SPEC_DEFAULTS['on_holiday']}",
        choices=OnHoliday.choices(),
        to_json=_json_choice,
        shown_with="holidays",
    ),
)

BY_NAME: dict[str, Option] = {o.name: o for o in OPTIONS}
#: The options' names, in declaration order.
NAMES: tuple[str, ...] = tuple(BY_NAME)
#: What the decorators take.
CODE_NAMES: tuple[str, ...] = tuple(o.name for o in OPTIONS if o.in_code)
#: Other spellings of options: alias -> name.
ALIASES: dict[str, str] = {alias: o.name for o in OPTIONS for alias in o.aliases}
#: The rarer options (docs/triggers.md#schedule-options): stored together in the stores'
#: ``options`` column, listed together in the admin API's JSON and shown, when set, by
#: ``tickwork jobs show`` and the dashboard. Read at each call (a test adds one).
STORED: tuple[Option, ...] = tuple(o for o in OPTIONS if o.field in OPTION_FIELDS)


class ScheduleOptions(TypedDict, total=False):
    """The options as keyword arguments, for type checkers (:data:`OPTIONS` is what runs; a test
    holds the two equal)."""

    kind: str | None
    tz: str
    timezone: str
    executor: str | None
    args: Mapping[str, Any] | None
    timeout: float | timedelta | str
    misfire: str | MisfirePolicy | None
    retries: int
    retry_backoff: float | timedelta | str
    enabled: bool
    pause_after_failures: int | None
    jitter: float | timedelta | str
    start_at: datetime | str | None
    end_at: datetime | str | None
    misfire_grace: float | timedelta | str | None
    max_catchup: int | None
    max_runs: int | None
    on_finish: str | OnFinish
    on_abandon: str | OnAbandon
    also: Sequence[str] | str
    exclude: Sequence[str] | str
    overlap: str | Overlap
    max_concurrent: int | None
    concurrency_key: str | None
    concurrency_limit: int | None
    holidays: str | None
    on_holiday: str | OnHoliday


class CodeOptions(TypedDict, total=False):
    """The options the decorators take (:data:`CODE_NAMES`)."""

    tz: str
    timezone: str
    executor: str | None
    timeout: float | timedelta | str
    misfire: str | MisfirePolicy | None
    retries: int
    retry_backoff: float | timedelta | str
    enabled: bool
    pause_after_failures: int | None
    jitter: float | timedelta | str
    start_at: datetime | str | None
    end_at: datetime | str | None
    misfire_grace: float | timedelta | str | None
    max_catchup: int | None
    max_runs: int | None
    on_finish: str | OnFinish
    on_abandon: str | OnAbandon
    also: Sequence[str] | str
    exclude: Sequence[str] | str
    overlap: str | Overlap
    max_concurrent: int | None
    concurrency_key: str | None
    concurrency_limit: int | None
    holidays: str | None
    on_holiday: str | OnHoliday


def given(options: Mapping[str, Any], *, allowed: Iterable[str] = NAMES, what: str = "option") -> dict[str, Any]:
    """``options`` under their names (an alias becomes its option's name).

    :raises TypeError: for a keyword that is no option (as Python does for an unknown keyword),
        or an option given under two spellings
    """
    allowed = tuple(allowed)
    out: dict[str, Any] = {}
    for key, value in options.items():
        name = ALIASES.get(key, key)
        if name not in allowed:
            raise TypeError(f"unknown {what} {key!r}; {what}s: {', '.join(allowed)}")
        if name in out:
            raise TypeError(f"{name} is given twice (as {name} and as {key}); give one")
        out[name] = value
    return out


def values(options: Mapping[str, Any]) -> dict[str, Any]:
    """The :class:`ScheduleSpec` fields that ``options`` (names as :func:`given` returns them) set,
    every option's default filled in: ``{field: value}``, each converted and named in its error.
    ``None`` stays ``None`` for the options whose default is the configuration's (kind, executor,
    misfire) and gives the default for the others (``args=None``: no arguments)."""
    out: dict[str, Any] = {}
    for option in OPTIONS:
        value = options.get(option.name)
        if value is None:
            value = option.default
        out[option.field] = None if value is None else option.convert(option.name, value)
    return out


def of_spec(spec: ScheduleSpec) -> dict[str, Any]:
    """Every option's value in ``spec`` (what ``Admin.update`` keeps when not given)."""
    return {o.name: getattr(spec, o.field) for o in OPTIONS}


def stored_json(spec: ScheduleSpec) -> dict[str, Any] | None:
    """The stored options ``spec`` sets away from their defaults, as JSON under their names (the
    stores' ``options`` column); ``None`` when it sets none."""
    out: dict[str, Any] = {}
    for option in STORED:
        value = getattr(spec, option.field)
        if value != option.default:
            out[option.name] = option.dump(value)
    return out or None


def stored_fields(stored: Mapping[str, Any]) -> dict[str, Any]:
    """The :class:`ScheduleSpec` fields of a JSON object :func:`stored_json` wrote: every stored
    option, those it does not hold at their defaults. A key that is no option (one a newer
    tickwork wrote) is passed over.

    :raises tickwork.errors.ConfigError: for a value its option cannot read
    """
    return {o.field: o.load(stored[o.name]) if o.name in stored else o.default for o in STORED}


def spec_json(spec: ScheduleSpec) -> dict[str, Any]:
    """Every stored option of ``spec`` under its name, as JSON (``null``: unset): what the admin
    API's JSON adds to a schedule's (``jobs list|show --json``, the dashboard's JSON API)."""
    return {o.name: o.dump(getattr(spec, o.field)) for o in STORED}


def shown(described: Described) -> list[Shown]:
    """The stored options the schedule sets, as a person reads them (``jobs show``, the
    dashboard), in the table's order."""
    out: list[Shown] = []
    for option in STORED:
        line = None if option.show is None else option.show(described)
        if line is not None:
            out.append(line)
    return out
