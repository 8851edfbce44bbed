"""A schedule's options, declared once: their names, defaults, how each is read from a Python,
TOML or JSON value and from command-line text, and their help.

A schedule is its name, expression and target plus these options. The decorators
(``@tickwork.cron(..., retries=2)``), :meth:`tickwork.Admin.add` and :meth:`~tickwork.Admin.update`,
``tickwork jobs add|update`` and the schedule files of ``jobs add --from`` all read them from
:data:`OPTIONS`; a new option is one more entry there (and a :class:`~tickwork.ScheduleSpec` field).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from datetime import datetime, timedelta
from typing import Any, TypedDict

from ..errors import ConfigError
from ..structures import ON_ABANDON, ON_FINISH, OVERLAP, MisfirePolicy, ScheduleSpec, parse_iso
from .durations import duration, seconds_in

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

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


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
    ),
    Option(
        "misfire",
        "misfire",
        None,
        _misfire,
        str,
        "what to do with missed fire times",
        "default: scheduler.misfire",
        choices=tuple(p.value for p in MisfirePolicy),
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
    ),
    Option("start_at", "start_at", None, _moment, _iso_text, "no fire before this time", metavar="TIME"),
    Option("end_at", "end_at", None, _moment, _iso_text, "no fire after this time", metavar="TIME"),
    Option(
        "misfire_grace",
        "misfire_grace",
        None,
        duration,
        non_negative_seconds,
        "seconds a fire may be late and still run",
        "default: scheduler.misfire_grace",
        metavar="SECONDS",
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
    ),
    Option(
        "on_finish",
        "on_finish",
        _SPEC_DEFAULTS["on_finish"],
        _as_is,
        str,
        "what becomes of it after max_runs: keep (shown finished) or remove",
        f"default {_SPEC_DEFAULTS['on_finish']}",
        choices=ON_FINISH,
    ),
    # on_abandon (issue #33, item 7): a fire abandoned with its node, run again or not.
    Option(
        "on_abandon",
        "on_abandon",
        _SPEC_DEFAULTS["on_abandon"],
        _as_is,
        str,
        "a fire abandoned because its node died mid-run: skip it or rerun it (a further attempt, inside the grace)",
        f"default {_SPEC_DEFAULTS['on_abandon']}",
        choices=ON_ABANDON,
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
    ),
    # Concurrency (docs/triggers.md#overlap): how many runs may go on at once, across the cluster.
    Option(
        "overlap",
        "overlap",
        _SPEC_DEFAULTS["overlap"],
        _as_is,
        str,
        "a fire due while the previous run is active: skip it, buffer_one / buffer_all wait for "
        "the run's end, cancel_other stops the run, allow runs it alongside (see --max-concurrent)",
        f"default {_SPEC_DEFAULTS['overlap']}",
        choices=OVERLAP,
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
    ),
)

BY_NAME: dict[str, Option] = {o.name: o for o in OPTIONS}
#: The options' names, in declaration order.
NAMES: tuple[str, ...] = tuple(BY_NAME)
#: What the decorators take.
CODE_NAMES: tuple[str, ...] = tuple(o.name for o in OPTIONS if o.in_code)
#: Other spellings of options: alias -> name.
ALIASES: dict[str, str] = {alias: o.name for o in OPTIONS for alias in o.aliases}


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
    on_finish: str
    on_abandon: str
    also: Sequence[str] | str
    exclude: Sequence[str] | str
    overlap: str
    max_concurrent: int | None
    concurrency_key: str | None
    concurrency_limit: int | None


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
    on_finish: str
    on_abandon: str
    also: Sequence[str] | str
    exclude: Sequence[str] | str
    overlap: str
    max_concurrent: int | None
    concurrency_key: str | None
    concurrency_limit: int | None


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
