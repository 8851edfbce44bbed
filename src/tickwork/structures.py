"""Plain data passed between the engine and the plugins.

Every value here is immutable and validated on construction; a validation error names the field.
All datetimes are timezone-aware and in UTC.
"""

from __future__ import annotations

import enum
import functools
import unicodedata
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import Any, Self, TypeVar, overload

from .errors import ConfigError, ExecutorNotConfigured

T = TypeVar("T")

#: Number of hash buckets schedules are spread over; membership plugins own buckets, not schedules.
BUCKETS = 1024

DEFAULT_TIMEOUT = timedelta(minutes=5)
#: The namespace of a schedule that names none (docs/teams.md), and the longest namespace name.
DEFAULT_NAMESPACE = "default"
MAX_NAMESPACE = 100
#: The admin API's and the CLI's ``--namespace`` for every namespace at once (reads only): no
#: namespace can be named so (:func:`check_namespace`).
ALL_NAMESPACES = "*"
#: What identifies a schedule: its namespace and its name (unique within the namespace).
ScheduleKey = tuple[str, str]
#: The concurrency keys of namespaces (their ``max_concurrent`` and the turns of their writes):
#: a schedule's own ``concurrency_key`` may not start with it.
NAMESPACE_KEY_PREFIX = "namespace:"
#: The longest soft timeout of a run.
MAX_TIMEOUT = timedelta(days=30)
#: The most retries of one fire, and the longest wait before the first one.
MAX_RETRIES = 100
MAX_RETRY_BACKOFF = timedelta(days=1)
#: Longest error text kept in the history (every store caps it: :func:`cap_error`).
MAX_ERROR_CHARS = 4000
#: The longest ``jitter`` of a schedule, and the most consecutive failures ``pause_after_failures`` counts.
MAX_JITTER = timedelta(days=1)
MAX_PAUSE_AFTER_FAILURES = 10_000
#: The most missed fires ``max_catchup`` lets policy ``all`` replay.
MAX_CATCHUP = 10_000
#: The most runs ``max_runs`` allows.
MAX_RUNS = 1_000_000_000
#: The most further expressions (``also``) and exclusions (``exclude``) of one schedule.
MAX_EXPRESSIONS = 20
#: The longest ``holidays`` value (a calendar spec such as ``DE-BE`` or a ``[calendars.NAME]`` name).
MAX_CALENDAR_NAME = 100


class Choice(enum.StrEnum):
    """A string enum whose error for an unknown value lists the valid ones."""

    @classmethod
    def _missing_(cls, value: object) -> Any:
        raise ValueError(f"{value!r} is not a valid {cls.__name__}; choose one of: {', '.join(m.value for m in cls)}")

    @classmethod
    def choices(cls) -> tuple[str, ...]:
        """The values, in declaration order (a command line's ``choices``, an error's list)."""
        return tuple(m.value for m in cls)

    @classmethod
    def of(cls, name: str, value: object) -> Self:
        """``value``, a member or its text, as the member: how a schedule option given as text
        (``overlap="skip"``) is read.

        :raises ValueError: naming the field ``name`` and listing the choices
        """
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls(value)
            except ValueError:
                pass  # said below, naming the field
        raise ValueError(f"{name}: one of {', '.join(cls.choices())}, got {value!r}")


class Overlap(Choice):
    """What a schedule does with a fire that comes due while its own previous run is active
    (docs/triggers.md#overlap)."""

    #: The fire is skipped (the default).
    SKIP = "skip"
    #: The latest such fire waits for the run's end; older ones are skipped.
    BUFFER_ONE = "buffer_one"
    #: Every such fire waits, oldest first (within the misfire grace, at most ``max_catchup``).
    BUFFER_ALL = "buffer_all"
    #: The run is stopped and the latest fire starts.
    CANCEL_OTHER = "cancel_other"
    #: The fire runs beside the earlier runs, up to ``max_concurrent`` at once.
    ALLOW = "allow"

    @property
    def runs_beside(self) -> bool:
        """Its fires start while earlier runs go on: the schedule is released as a run starts,
        admitted by ``max_concurrent``, and its fires are not retried."""
        return self is Overlap.ALLOW

    @property
    def planned(self) -> bool:
        """The end of a run plans the fires that came due during it
        (:func:`tickwork.engine.overlap.plan_overlap`) rather than skipping them."""
        return self in _PLANNED

    @property
    def keeps_every(self) -> bool:
        """Every fire that came due during a run waits, not only the latest."""
        return self is Overlap.BUFFER_ALL

    @property
    def cancels(self) -> bool:
        """A run is stopped when the schedule's next fire comes due."""
        return self is Overlap.CANCEL_OTHER


_PLANNED = frozenset({Overlap.BUFFER_ONE, Overlap.BUFFER_ALL, Overlap.CANCEL_OTHER})


class OnFinish(Choice):
    """What becomes of a schedule once it ran ``max_runs`` times."""

    #: Kept, shown finished, with no next fire.
    KEEP = "keep"
    #: Removed with its history.
    REMOVE = "remove"

    @property
    def removes(self) -> bool:
        return self is OnFinish.REMOVE


class OnAbandon(Choice):
    """What becomes of a fire abandoned because its node died mid-run (docs/triggers.md#on-abandon)."""

    #: Left so: the history says ``abandoned``.
    SKIP = "skip"
    #: Run again as a further attempt, inside the misfire grace and the retry budget
    #: (:func:`rerun_refusal`).
    RERUN = "rerun"

    @property
    def reruns(self) -> bool:
        return self is OnAbandon.RERUN


class OnHoliday(Choice):
    """What becomes of a fire that falls on a holiday or a non-workday of the schedule's
    ``holidays`` calendar (docs/holidays.md)."""

    #: Dropped: recorded as skipped, with the holiday in its reason (the default).
    SKIP = "skip"
    #: Moved to the same local time on the next business day.
    NEXT = "next"
    #: Moved to the same local time on the previous business day.
    PREVIOUS = "previous"


#: How a backfill's fires of one schedule run beside one another (docs/cluster.md#backfill):
#: ``buffer_all`` (the default) one at a time, oldest first, each once no run of the schedule is
#: running; ``allow`` side by side, up to the schedule's ``max_concurrent`` (unbounded when unset).
BACKFILL_OVERLAP = (Overlap.BUFFER_ALL.value, Overlap.ALLOW.value)


def backfill_takeable(overlaps: list[str], running: int, max_concurrent: int | None) -> int:
    """How many of a schedule's queued backfill fires (their ``overlap`` choices, earliest fire
    first) may start now, with ``running`` runs of the schedule running: fire-time order is kept,
    so the count stops at the first that has to wait. A ``buffer_all`` fire starts only alone
    (nothing running, nothing started before it in the same pass); an ``allow`` fire while fewer
    than ``max_concurrent`` runs are running (any number when ``None``)."""
    taken = 0
    for overlap in overlaps:
        active = running + taken
        beside = Overlap(overlap).runs_beside
        if beside:
            if max_concurrent is not None and active >= max_concurrent:
                break
        elif active > 0:
            break
        taken += 1
        if not beside:
            break  # a buffer_all fire runs alone: the next waits for its end
    return taken


def check_backfill_overlap(overlap: str) -> None:
    """:raises ValueError: for an ``overlap`` not in :data:`BACKFILL_OVERLAP`"""
    if overlap not in BACKFILL_OVERLAP:
        raise ValueError(f"backfill overlap must be one of {', '.join(BACKFILL_OVERLAP)}, not {overlap!r}")


def refuse_future_backfill(name: str, times: Sequence[datetime], now: datetime) -> None:
    """Never early (invariant 2), for a backfill too: a store refuses to queue a fire time after
    its clock's ``now``, whoever asks (``Admin.backfill`` caps its range before it asks).

    :raises tickwork.errors.ConfigError: naming the first such time
    """
    future = [t for t in times if t > now]
    if future:
        raise ConfigError(
            f"backfill: {name}: {len(future)} fire time(s) from {iso_z(min(future))} are after now "
            f"({iso_z(now)}, database clock); a backfill never runs a fire early"
        )


class StartVerdict(enum.Enum):
    """Whether a run waiting for its executor may start its body now (an executor asks its
    :class:`~tickwork.abc.BodyFence` as the body is about to start: docs/claim-protocol.md, "A
    node declared dead")."""

    #: The node still holds the fire: start the body.
    START = "start"
    #: The node is unsure of its membership (its heartbeat is stale): ask again shortly.
    WAIT = "wait"
    #: The node was declared dead since the run was handed over: do not start it; report
    #: :data:`NOT_STARTED`.
    DROP = "drop"


#: The most runs ``max_concurrent`` and ``concurrency_limit`` allow at once, and the longest key.
MAX_CONCURRENT = 10_000
MAX_CONCURRENCY_KEY = 200


class RunStatus(Choice):
    """Status of one run in the history table."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    SKIPPED = "skipped"
    ABANDONED = "abandoned"
    #: Handed to another system's queue (Celery, RQ, Dramatiq); that system's worker reports on.
    SUBMITTED = "submitted"
    #: A worker of that system took a handed-off run and is running it.
    STARTED = "started"
    #: Stopped by tickwork because the schedule's next fire came due (``overlap = "cancel_other"``).
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        """Whether an executor may report it as the end of a run: every status but ``running``
        and ``started`` (``submitted`` ends the claim; the worker's reports follow it)."""
        return self is not RunStatus.RUNNING and self is not RunStatus.STARTED


#: A hand-off in these statuses is not final: its schedule's next hand-off is skipped meanwhile.
HANDOFF_OPEN = frozenset({RunStatus.SUBMITTED, RunStatus.STARTED})

#: How the error text of a ``submitted`` run starts once no worker reported it started within
#: its executor's ``pickup_timeout`` (the hand-off executors' maintenance step writes it, once per
#: run): the run's own row says it is stuck, so health reads it by the database's state alone.
HANDOFF_STUCK = "stuck: "
#: How the error text of a fire skipped because its schedule's previous hand-off is not final starts.
HANDOFF_BLOCKED = "previous hand-off "


def handoff_stuck(status: RunStatus, error: str | None) -> bool:
    """Whether a run with this status and error is a hand-off no worker picked up in time."""
    return status is RunStatus.SUBMITTED and (error or "").startswith(HANDOFF_STUCK)


#: A schedule whose last recorded run ended with one of these is "failing" (admin filters, dashboard).
FAILING = frozenset({RunStatus.FAILED, RunStatus.TIMED_OUT})


class ScheduleState(Choice):
    IDLE = "idle"
    RUNNING = "running"


class MisfirePolicy(Choice):
    """What to do with fire times that passed while no node could run them (see docs/cluster.md)."""

    SKIP = "skip"
    ONCE = "once"
    ALL = "all"


def bucket_of(name: str) -> int:
    """The hash bucket of a schedule name; stable across processes and versions."""
    return zlib.crc32(name.encode("utf-8")) % BUCKETS


def assembled(cls: type[T], values: dict[str, Any]) -> T:
    """An instance of the frozen dataclass ``cls`` holding ``values`` (every field), built
    without its ``__init__``: for values already checked, on paths taken for every fire. A frozen
    dataclass's generated ``__init__`` sets each field through ``object.__setattr__``: 2.7 µs for
    a :class:`JobCall`, 0.6 µs this way."""
    obj = object.__new__(cls)
    obj.__dict__.update(values)
    return obj


def _check_aware(field_name: str, value: datetime | None) -> None:
    if value is not None and (value.tzinfo is None or value.utcoffset() is None):
        raise ValueError(f"{field_name}: datetime must be timezone-aware, got {value!r}")


def _seconds(value: object) -> str:
    """A duration in an error message: ``90 s`` rather than ``datetime.timedelta(seconds=90)``."""
    return f"{value.total_seconds():g} s" if isinstance(value, timedelta) else repr(value)


def utc(value: datetime) -> datetime:
    """Return ``value`` converted to UTC; naive datetimes are rejected."""
    _check_aware("datetime", value)
    return value.astimezone(UTC)


def cap_error(text: str | None, limit: int = MAX_ERROR_CHARS) -> str | None:
    """``text`` cut to ``limit`` characters, saying how much was cut; ``None`` stays ``None``."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 20] + f"... [{len(text) - limit + 20} chars cut]"


#: The longest worker name a run keeps (``tickwork_runs.worker`` is 200 characters wide).
MAX_WORKER_CHARS = 200


def cap_worker(name: str) -> str:
    """A queue worker's name as a run keeps it: at most :data:`MAX_WORKER_CHARS` characters (a
    longer one, which no queue gives by default, is cut rather than refused: the report that
    carries it must still land)."""
    return name[:MAX_WORKER_CHARS]


@overload
def iso_z(value: datetime, timespec: str = "auto") -> str: ...
@overload
def iso_z(value: None, timespec: str = "auto") -> None: ...
@overload
def iso_z(value: datetime | None, timespec: str = "auto") -> str | None: ...
def iso_z(value: datetime | None, timespec: str = "auto") -> str | None:
    """ISO 8601 in UTC with a trailing ``Z``: ``2026-12-01T10:00:00Z`` (microseconds kept when
    present, or as ``timespec`` says: see :meth:`datetime.isoformat`); ``None`` stays ``None``.
    How tickwork writes every time a program reads (JSON output, JSON logs, payloads)."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def parse_iso(text: str) -> datetime:
    """The reverse of :func:`iso_z`: an ISO 8601 date-time, ``Z`` (or ``z``) for UTC; without an
    offset it is UTC, as everywhere in tickwork. Surrounding blanks are ignored.

    :raises ValueError: if ``text`` is not an ISO 8601 date-time
    """
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


@functools.lru_cache(maxsize=256)
def _namespace_ok(namespace: str) -> bool:
    # Remembered: every spec checks its namespace, and a module declaring 20,000 jobs has one
    # (the test by character was an eighth of a declaration).
    return 0 < len(namespace) <= MAX_NAMESPACE and all(c.isascii() and (c.isalnum() or c in "-_.") for c in namespace)


def check_name(name: str) -> None:
    """Refuse a schedule name that is not one line of printable text: a newline or other control
    character would forge lines of ``tickwork jobs list`` and of the logs, a bidirectional override
    would show another name than the stored one, and a lone surrogate (what Python makes of an
    undecodable byte in argv or a file name) cannot be stored as UTF-8 at all.

    :raises ValueError: naming the first offending character by code point and position
    """
    if name.isprintable():  # the common case, in C
        return
    for position, char in enumerate(name, 1):
        if char.isprintable():
            continue
        point = ord(char)
        if 0xDC80 <= point <= 0xDCFF:
            what = f"an undecodable byte 0x{point - 0xDC00:02X} (U+{point:04X}); the name must be valid UTF-8"
        elif 0xD800 <= point <= 0xDFFF:
            what = f"a lone surrogate U+{point:04X}; the name must be valid UTF-8"
        else:
            what = f"the unprintable character U+{point:04X} ({unicodedata.name(char, 'a control character')})"
        raise ValueError(
            f"name: {what} at position {position}; a schedule name must be one line of printable text "
            "(no newline, tab or other control or format character)"
        )


def check_namespace(namespace: object) -> None:
    """Refuse a namespace that is not a short word: letters, digits, ``-``, ``_`` and ``.``
    (it is typed on command lines, put in URLs and in ``[namespaces.NAME]`` table names).

    :raises ValueError: saying what a namespace may be
    """
    if type(namespace) is str and _namespace_ok(namespace):
        return
    if (
        not isinstance(namespace, str)
        or not 0 < len(namespace) <= MAX_NAMESPACE
        or not all(c.isascii() and (c.isalnum() or c in "-_.") for c in namespace)
    ):
        raise ValueError(
            f"namespace: letters, digits, '-', '_' and '.', 1 to {MAX_NAMESPACE} characters, got {namespace!r}"
        )


@dataclass(frozen=True)
class NamespaceLimits:
    """The limits of one namespace (``[namespaces.NAME]``; docs/teams.md#limits).

    :param max_schedules: most schedules it holds (``None``: no limit)
    :param max_concurrent: most runs of its schedules at once across the cluster (``None``: no limit)
    """

    max_schedules: int | None = None
    max_concurrent: int | None = None


@dataclass(frozen=True)
class ScheduleSpec:
    """What a user declares: everything about a schedule except its run-time state.

    :param name: unique name of the schedule
    :param trigger_kind: registered trigger kind (``cron``, ``calendar``, ...)
    :param expression: the trigger expression, in the syntax of ``trigger_kind``
    :param timezone: IANA zone the expression is evaluated in
    :param executor: registered executor plugin that runs the target
    :param target: executor-specific reference (``module:function`` for ``local``, a URL for ``http``)
    :param arguments: JSON-serialisable keyword arguments for the target
    :param timeout: soft timeout of one run
    :param module: the module (deployment) that declared it; ``None`` for run-time schedules
    :param enabled: whether it fires at all
    :param misfire: policy for missed fire times, ``None`` for the configured default
    :param retries: how many times a failed run is retried before the next fire time
    :param retry_backoff: wait before the first retry; doubled for each further one
    :param pause_after_failures: pause the schedule after this many consecutive failed fires
        (each after its retries); ``None``: never
    :param jitter: each fire time is moved later by a fixed offset in ``[0, jitter)`` derived
        from the name (:func:`tickwork.scheduling.fireplan.jitter_offset`)
    :param start_at: no fire before this time; ``None``: no bound
    :param end_at: no fire after this time; ``None``: no bound
    :param misfire_grace: seconds a fire may be late and still run; ``None``: the node's
        ``scheduler.misfire_grace``
    :param max_catchup: with misfire policy ``all``, the most missed fires replayed; the older
        ones are recorded as skipped. ``None``: no cap
    :param max_runs: after this many fires that ran (succeeded, failed or timed out; each after
        its retries), the schedule has no next fire; ``None``: no end
    :param on_finish: ``keep`` (shown finished) or ``remove`` the schedule once it ran ``max_runs`` times
    :param on_abandon: ``skip`` (a fire abandoned with its node is not run again) or ``rerun`` (it
        runs again as a further attempt inside its misfire grace; :func:`rerun_refusal`)
    :param also: further trigger expressions (each kind recognised, in ``timezone``): the schedule
        fires at the times of any of them, a time two give once
    :param exclude: expressions whose times do not fire (``*-12-25``, ``Sat,Sun``, cron): see
        docs/triggers.md#several-expressions-and-exclusions
    :param overlap: what a fire due while the schedule's previous run is still active does
        (:class:`Overlap`; docs/triggers.md#overlap); ``allow`` starts it while earlier runs go on,
        up to ``max_concurrent`` at once across the cluster
    :param max_concurrent: with ``overlap = "allow"``, the most runs of this schedule at once;
        ``None``: no bound. An ``allow`` schedule's fires are not retried (``retries`` applies
        to ``skip`` schedules)
    :param concurrency_key: a name several schedules share: at most ``concurrency_limit`` runs
        of the schedules carrying it at once across the cluster
    :param concurrency_limit: with ``concurrency_key``, that bound (default 1)
    :param holidays: a business-day calendar (``"DE-BE"``: a country and optional subdivision of
        the ``holidays`` package, or the name of a ``[calendars.NAME]`` table): see docs/holidays.md
    :param on_holiday: what a fire on a day that is no business day of ``holidays`` does
        (:class:`OnHoliday`)
    :param namespace: the namespace it belongs to (docs/teams.md): its name is unique within it
    """

    name: str
    trigger_kind: str
    expression: str
    target: str
    timezone: str = "UTC"
    executor: str = "local"
    arguments: dict[str, Any] = field(default_factory=dict)
    timeout: timedelta = DEFAULT_TIMEOUT
    module: str | None = None
    enabled: bool = True
    misfire: MisfirePolicy | None = None
    retries: int = 0
    retry_backoff: timedelta = timedelta(seconds=10)
    pause_after_failures: int | None = None
    jitter: timedelta = timedelta(0)
    start_at: datetime | None = None
    end_at: datetime | None = None
    misfire_grace: timedelta | None = None
    max_catchup: int | None = None
    also: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_runs: int | None = None
    on_finish: OnFinish = OnFinish.KEEP
    on_abandon: OnAbandon = OnAbandon.SKIP
    overlap: Overlap = Overlap.SKIP
    max_concurrent: int | None = None
    concurrency_key: str | None = None
    concurrency_limit: int | None = None
    holidays: str | None = None
    on_holiday: OnHoliday = OnHoliday.SKIP
    namespace: str = DEFAULT_NAMESPACE

    def __post_init__(self) -> None:
        check_namespace(self.namespace)
        for name in ("name", "trigger_kind", "expression", "target", "timezone", "executor"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name}: must be a non-empty string, got {value!r}")
        if len(self.name) > 200:
            raise ValueError(f"name: at most 200 characters, got {len(self.name)}")
        check_name(self.name)
        if not isinstance(self.arguments, dict):
            raise ValueError(f"arguments: must be a JSON object (dict), got {type(self.arguments).__name__}")
        if not isinstance(self.timeout, timedelta) or not timedelta(0) < self.timeout <= MAX_TIMEOUT:
            raise ValueError(
                f"timeout: must be more than 0 s and at most {MAX_TIMEOUT.days} days, got {_seconds(self.timeout)}"
            )
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or not 0 <= self.retries <= MAX_RETRIES:
            raise ValueError(f"retries: must be an integer from 0 to {MAX_RETRIES}, got {self.retries!r}")
        if not isinstance(self.retry_backoff, timedelta) or not timedelta(0) <= self.retry_backoff <= MAX_RETRY_BACKOFF:
            raise ValueError(
                f"retry_backoff: must be from 0 s to {MAX_RETRY_BACKOFF.days} day, got {_seconds(self.retry_backoff)}"
            )
        if self.misfire is not None and not isinstance(self.misfire, MisfirePolicy):
            object.__setattr__(self, "misfire", MisfirePolicy(self.misfire))
        self._check_semantics()

    def _at_defaults(self) -> bool:
        """Whether every option :meth:`_check_semantics` checks is at its default, as the members
        and types it would leave them (most declarations: their check and conversions were a
        quarter of a declaration)."""
        return (
            self.pause_after_failures is None
            and self.max_catchup is None
            and self.max_runs is None
            and self.on_finish is OnFinish.KEEP
            and self.on_abandon is OnAbandon.SKIP
            and type(self.jitter) is timedelta
            and not self.jitter
            and self.misfire_grace is None
            and self.start_at is None
            and self.end_at is None
            and type(self.also) is tuple
            and not self.also
            and type(self.exclude) is tuple
            and not self.exclude
            and self.on_holiday is OnHoliday.SKIP
            and self.holidays is None
            and self.overlap is Overlap.SKIP
            and self.max_concurrent is None
            and self.concurrency_key is None
            and self.concurrency_limit is None
        )

    def _check_semantics(self) -> None:
        """The options of docs/triggers.md#schedule-options (pausing, jitter, bounds, catch-up)."""
        if self._at_defaults():
            return
        _check_count("pause_after_failures", self.pause_after_failures, 1, MAX_PAUSE_AFTER_FAILURES)
        _check_count("max_catchup", self.max_catchup, 0, MAX_CATCHUP)
        _check_count("max_runs", self.max_runs, 1, MAX_RUNS)
        # Given as text (``on_finish="remove"``) they are held as the members; the error lists the choices.
        object.__setattr__(self, "on_finish", OnFinish.of("on_finish", self.on_finish))
        object.__setattr__(self, "on_abandon", OnAbandon.of("on_abandon", self.on_abandon))
        if not isinstance(self.jitter, timedelta) or not timedelta(0) <= self.jitter <= MAX_JITTER:
            raise ValueError(f"jitter: must be from 0 s to {MAX_JITTER.days} day, got {_seconds(self.jitter)}")
        grace = self.misfire_grace
        if grace is not None and (not isinstance(grace, timedelta) or not timedelta(0) <= grace <= MAX_TIMEOUT):
            raise ValueError(f"misfire_grace: must be from 0 s to {MAX_TIMEOUT.days} days, got {_seconds(grace)}")
        for name in ("start_at", "end_at"):
            value = getattr(self, name)
            if value is not None:
                if not isinstance(value, datetime):
                    raise ValueError(f"{name}: must be a datetime, got {type(value).__name__}")
                _check_aware(name, value)
                object.__setattr__(self, name, value.astimezone(UTC))
        for name in ("also", "exclude"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, tuple | list):
                raise ValueError(f"{name}: must be a list of expressions, got {type(value).__name__}")
            if len(value) > MAX_EXPRESSIONS or not all(isinstance(e, str) and e.strip() for e in value):
                raise ValueError(f"{name}: at most {MAX_EXPRESSIONS} non-empty expressions, got {list(value)!r}")
            object.__setattr__(self, name, tuple(value))
        object.__setattr__(self, "on_holiday", OnHoliday.of("on_holiday", self.on_holiday))
        calendar = self.holidays
        if calendar is not None and (
            not isinstance(calendar, str) or not calendar.strip() or len(calendar) > MAX_CALENDAR_NAME
        ):
            raise ValueError(
                f"holidays: a calendar such as 'DE-BE' or a [calendars.NAME] name of at most "
                f"{MAX_CALENDAR_NAME} characters, got {calendar!r}"
            )
        if self.start_at is not None and self.end_at is not None and self.end_at < self.start_at:
            raise ValueError(f"end_at: must not be before start_at ({iso_z(self.end_at)} < {iso_z(self.start_at)})")
        self._check_concurrency()

    def _check_concurrency(self) -> None:
        """``overlap``, ``max_concurrent`` and the concurrency key (docs/triggers.md#overlap)."""
        object.__setattr__(self, "overlap", Overlap.of("overlap", self.overlap))
        _check_count("max_concurrent", self.max_concurrent, 1, MAX_CONCURRENT)
        _check_count("concurrency_limit", self.concurrency_limit, 1, MAX_CONCURRENT)
        # Like max_catchup without misfire policy all, max_concurrent without overlap allow and
        # concurrency_limit without a key are kept and have no effect (docs/triggers.md#overlap).
        key = self.concurrency_key
        if key is not None and (not isinstance(key, str) or not key.strip() or len(key) > MAX_CONCURRENCY_KEY):
            raise ValueError(
                f"concurrency_key: a non-empty name of at most {MAX_CONCURRENCY_KEY} characters, got {key!r}"
            )
        if key is not None and key.startswith(NAMESPACE_KEY_PREFIX):
            raise ValueError(
                f"concurrency_key: {NAMESPACE_KEY_PREFIX!r} starts the keys of namespaces' limits "
                f"([namespaces.NAME] max_concurrent); choose another key, got {key!r}"
            )

    @property
    def concurrent(self) -> bool:
        """Whether its fires are admitted by a concurrency count (``overlap = "allow"`` or a
        concurrency key): see :meth:`tickwork.abc.Store.admit`."""
        return self.overlap.runs_beside or self.concurrency_key is not None

    @property
    def plain(self) -> bool:
        """Whether it uses none of the options that change its fire times (jitter, bounds, several
        expressions, exclusions, a holiday calendar)."""
        return (
            self.jitter == _NO_JITTER
            and self.start_at is None
            and self.end_at is None
            and not self.also
            and not self.exclude
            and self.holidays is None
        )

    @classmethod
    def stored(cls, fields: dict[str, Any]) -> ScheduleSpec:
        """A spec read back from the store, given every field: it was validated when it was
        written, so it is not checked again (re-validating every claimed row was 11 % of a node's
        engine thread in a 10,000-fire burst; keyword arguments cost 3.9 µs a spec, a dict 2.2)."""
        keys = fields.keys()
        if keys != _BASE_FIELDS and keys != _SPEC_FIELDS:
            raise ValueError(f"stored spec: expected the fields {sorted(_SPEC_FIELDS)}, got {sorted(fields)}")
        # Without the rarer options (docs/triggers.md#schedule-options) they read as their
        # defaults, the dataclass's class attributes (immutable values): a burst's specs are all
        # new and most set none of them, and ten more keys per spec cost 0.45 µs each.
        return assembled(cls, fields)

    @property
    def bucket(self) -> int:
        return bucket_of(self.name)

    @property
    def key(self) -> ScheduleKey:
        """Its identity: ``(namespace, name)``."""
        return (self.namespace, self.name)

    @property
    def trigger_key(self) -> tuple[str, str, str]:
        """What decides its fire times: kind, expression and zone. A schedule whose trigger_key
        changes is retriggered (its next fire recomputed from now)."""
        return (self.trigger_kind, self.expression, self.timezone)

    @property
    def times_key(self) -> tuple[object, ...]:
        """Everything that decides its fire times: the trigger and the options that move, bound,
        add to or exclude them. A schedule whose ``times_key`` changes gets its next fire
        recomputed from now (a jitter added takes effect at once, not after the next fire)."""
        return (
            *self.trigger_key,
            self.jitter,
            self.start_at,
            self.end_at,
            self.also,
            self.exclude,
            self.holidays,
            self.on_holiday,
        )

    def same_definition(self, other: ScheduleSpec) -> bool:
        """True when ``other`` declares the same schedule (ignores nothing but identity)."""
        return self == other


_SPEC_FIELDS = frozenset(f.name for f in fields(ScheduleSpec))
#: The rarer options: immutable defaults, kept on the class (see :meth:`ScheduleSpec.stored`).
OPTION_FIELDS = frozenset(
    {
        "pause_after_failures",
        "jitter",
        "start_at",
        "end_at",
        "misfire_grace",
        "max_catchup",
        "also",
        "exclude",
        "max_runs",
        "on_finish",
        "on_abandon",
        "overlap",
        "max_concurrent",
        "concurrency_key",
        "concurrency_limit",
        "holidays",
        "on_holiday",
    }
)
_BASE_FIELDS = _SPEC_FIELDS - OPTION_FIELDS
_NO_JITTER = timedelta(0)


def _check_count(name: str, value: object, low: int, high: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name}: must be an integer from {low} to {high} (or unset), got {value!r}")


#: Who pauses a schedule after ``pause_after_failures``.
PAUSED_BY_TICKWORK = "tickwork"


def failures_note(count: int) -> str:
    """The note of a schedule paused by ``pause_after_failures = count``."""
    return f"paused after {count} consecutive failed fire{'s' if count != 1 else ''} (pause_after_failures = {count})"


def rerun_attempts(retries: int) -> int:
    """The most attempts a fire of a schedule with ``on_abandon = "rerun"`` and ``retries`` may
    have, failed or abandoned: a rerun counts against the retry budget, and there is always room
    for one (a job that kills every node that runs it is run at most this many times)."""
    return 1 + max(min(retries, MAX_RETRIES), 1)


def rerun_refusal(*, attempt: int, late: float, grace: float, max_attempt: int) -> str | None:
    """Why abandoned ``attempt`` of a fire ``late`` seconds past its fire time (database clock)
    is not run again, or ``None``: it is (attempt ``attempt + 1``). Appended to the abandoned
    run's error."""
    if attempt >= max_attempt:
        return f"not rerun: attempt {attempt} was the last the retry budget allows ({max_attempt} attempts)"
    if late > grace:
        return f"not rerun: {late:.1f}s past its fire time, beyond its misfire grace of {grace:g}s"
    return None


@dataclass(frozen=True)
class Pause:
    """Why a disabled schedule is paused (``tickwork jobs pause --note``).

    :param note: the reason, as given (or written by tickwork for ``pause_after_failures``)
    :param by: who paused it (the user running the command, or ``tickwork``)
    :param at: when (database clock); ``None`` in a request, the store writes its clock
    :param until: when it resumes by itself (database clock); ``None``: until resumed
    """

    note: str
    by: str | None = None
    at: datetime | None = None
    until: datetime | None = None

    def __post_init__(self) -> None:
        _check_aware("at", self.at)
        _check_aware("until", self.until)


@dataclass(frozen=True)
class Schedule:
    """A stored schedule: its spec plus run-time state."""

    id: int
    spec: ScheduleSpec
    next_fire: datetime | None
    state: ScheduleState
    claimed_by: str | None
    claimed_at: datetime | None
    claim_seq: int
    created_at: datetime
    updated_at: datetime
    #: Why the schedule is parked (it fires no more until fixed), ``None`` when it is not.
    fault: str | None = None
    #: What kind of fault that is (``None`` when it is not parked).
    fault_kind: FaultKind | None = None
    #: Why it is paused (disabled with a note), ``None`` when it is not.
    pause: Pause | None = None
    #: Its consecutive failed fires (counted for ``pause_after_failures`` only).
    failures: int = 0
    #: The fires it ran (counted for ``max_runs`` only).
    run_count: int = 0
    #: The number of its current definition (:class:`ScheduleVersion`); 0: not changed since
    #: before versions were recorded (migration 0014), or a store that keeps none.
    version: int = 0
    #: The version the last ``tickwork apply`` left it at, ``None`` when no apply wrote it (or a
    #: store that keeps no such record): a ``version`` past it is drift (docs/schedules-in-git.md).
    applied_version: int | None = None

    @property
    def finished(self) -> bool:
        """It ran its ``max_runs`` fires: it fires no more."""
        limit = self.spec.max_runs
        return limit is not None and self.run_count >= limit

    def __post_init__(self) -> None:
        for name in ("next_fire", "claimed_at", "created_at", "updated_at"):
            _check_aware(name, getattr(self, name))

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def namespace(self) -> str:
        return self.spec.namespace

    @property
    def key(self) -> ScheduleKey:
        """Its identity: ``(namespace, name)``."""
        return self.spec.key


@dataclass(frozen=True)
class Claim:
    """A due schedule this node won, with the fence token that must accompany its end.

    :param run_id: id of the history row created for this fire; ``None`` if the history already
        held a run for (schedule, scheduled_for) — the fire must then not run (invariant 1)
    :param claim_seq: fence token; the end of the run only lands while the schedule still carries it
    :param scheduled_for: the due time that was claimed
    :param claimed_at: the database clock when the claim was made; earlier than
        ``scheduled_for`` when the claim was taken ahead of its time (``lookahead``)
    :param backfill_overlap: for a fire queued by a backfill
        (:meth:`tickwork.abc.Store.take_backfills`), the overlap it was queued with
        (:data:`BACKFILL_OVERLAP`); ``None`` for the schedule's own fires. A backfilled run holds
        no claim of its schedule (``claim_seq`` is only what the row had), so its end is written
        with :meth:`~tickwork.abc.Store.end_attempt` and plans no next fire (docs/cluster.md#backfill)
    """

    schedule_id: int
    spec: ScheduleSpec
    scheduled_for: datetime
    claim_seq: int
    claimed_at: datetime
    run_id: int | None
    attempt: int = 1
    backfill_overlap: str | None = None
    #: The schedule's version (:class:`ScheduleVersion`) the fire was claimed under: its runs
    #: record it. ``None``: a store that keeps no versions.
    version: int | None = None

    def __post_init__(self) -> None:
        _check_aware("scheduled_for", self.scheduled_for)
        _check_aware("claimed_at", self.claimed_at)

    @classmethod
    def stored(
        cls,
        *,
        schedule_id: int,
        spec: ScheduleSpec,
        scheduled_for: datetime,
        claim_seq: int,
        claimed_at: datetime,
        run_id: int | None,
        version: int | None = None,
    ) -> Claim:
        """A first attempt's claim as the store read it back (its times come aware from the
        store's column type), not checked again: one is built for every fire."""
        return assembled(
            cls,
            {
                "schedule_id": schedule_id,
                "spec": spec,
                "scheduled_for": scheduled_for,
                "claim_seq": claim_seq,
                "claimed_at": claimed_at,
                "run_id": run_id,
                "attempt": 1,
                "backfill_overlap": None,
                "version": version,
            },
        )

    @property
    def backfill(self) -> bool:
        """A fire queued by a backfill (``tickwork jobs backfill``), not one of the schedule's own."""
        return self.backfill_overlap is not None

    @property
    def early(self) -> bool:
        """Claimed before its fire time: it must not start before ``scheduled_for``."""
        return self.scheduled_for > self.claimed_at


@dataclass(frozen=True)
class JobCall:
    """What an executor receives for one run.

    :param node_id: the node that claimed and started the run (``tickwork.current_run().node_id``)
    :param backfill: the run of a fire queued by a backfill (``tickwork jobs backfill``), not
        one the schedule fired by itself
    """

    run_id: int
    schedule: str
    scheduled_for: datetime
    target: str
    arguments: dict[str, Any]
    timeout: float
    attempt: int = 1
    options: dict[str, Any] = field(default_factory=dict)
    node_id: str = ""
    backfill: bool = False
    #: The namespace of the schedule (docs/teams.md).
    namespace: str = DEFAULT_NAMESPACE

    @classmethod
    def for_claim(cls, claim: Claim, *, timeout: float, node_id: str) -> JobCall:
        """The call of ``claim``'s run (which has its run id), built from the claim's already
        checked values without ``__init__``: one is built for every fire."""
        assert claim.run_id is not None
        spec = claim.spec
        return assembled(
            cls,
            {
                "run_id": claim.run_id,
                "schedule": spec.name,
                "scheduled_for": claim.scheduled_for,
                "target": spec.target,
                "arguments": spec.arguments,
                "timeout": timeout,
                "attempt": claim.attempt,
                "options": {},
                "node_id": node_id,
                "backfill": claim.backfill,
                "namespace": spec.namespace,
            },
        )


@dataclass(frozen=True)
class Outcome:
    """How one run ended, as reported by an executor."""

    status: RunStatus
    error: str | None = None
    detail: str | None = None
    #: The exception a job raised in this process, if any: logged with its traceback
    #: (``exc_info``). Never stored; ``error`` holds its text.
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.status.final:
            raise ValueError(f"status: an outcome must be final, got {self.status.value!r}")


#: What an executor reports for a run whose body it did not start because its fence said
#: :attr:`StartVerdict.DROP`. The engine recognises this very object and writes nothing for the
#: run: the others recorded it ``abandoned`` when they declared this node dead.
NOT_STARTED = Outcome(
    RunStatus.SKIPPED,
    error="not started: this node was declared dead while the run waited for its executor; "
    "the other nodes recorded it abandoned",
)


@dataclass(frozen=True)
class Finish:
    """The end of a claimed run, handed to :meth:`tickwork.abc.Store.finish`.

    :param next_fire: the schedule's next fire time, ``None`` when it will never fire again
    :param skipped: fire times passed over, each with the reason, recorded as ``skipped``
    :param finished_at: when the run ended (database clock), recorded as the run's end (and
        as the time of its skipped fires); ``None``: the moment the store writes the end. An
        end may wait a little to be written with others (``end_batch_window``): this keeps
        its recorded time exact
    :param started_at: when the executor got the run (database clock), recorded as the run's
        start; ``None`` keeps what the claim wrote (the claim time, or nothing for a claim taken
        ahead of its time that never started)
    """

    claim: Claim
    outcome: Outcome
    next_fire: datetime | None
    skipped: tuple[tuple[datetime, str], ...] = ()
    finished_at: datetime | None = None
    started_at: datetime | None = None


@dataclass(frozen=True)
class StartRound:
    """What one :meth:`tickwork.abc.Store.start_round` did: the fenced starts, and what rode
    with them.

    :param granted: for each claim, whether it may start (as :meth:`~tickwork.abc.Store.start_held`)
    :param taken_over: how many fires the takeover gave back; ``None`` when it was not asked for
        or did not run (a database error: the caller runs it on its own later)
    :param ended: for each finish, as :meth:`~tickwork.abc.Store.finish` answers; ``None`` when
        they were not written (a database error: the caller keeps them and writes them again)
    :param error: the database error that stopped the takeover or the ends after the starts
        were recorded (the starts stand: the caller runs the granted fires, then reports it)
    """

    granted: tuple[bool, ...]
    taken_over: int | None = None
    ended: tuple[bool | None, ...] | None = None
    error: Exception | None = None


class FaultKind(enum.Enum):
    """What kind of fault parked a schedule (``Schedule.fault_kind``, stored beside the fault's
    text), so that readers tell them apart without reading words."""

    #: The node had no executor of the name the schedule gives (:class:`ExecutorNotConfigured`).
    EXECUTOR_NOT_CONFIGURED = "executor_not_configured"
    #: Anything else that kept a node from handling the schedule (a trigger, its arithmetic, ...).
    ERROR = "error"

    @classmethod
    def of(cls, exc: BaseException) -> FaultKind:
        return cls.EXECUTOR_NOT_CONFIGURED if isinstance(exc, ExecutorNotConfigured) else cls.ERROR


@dataclass(frozen=True)
class Fault:
    """Why a node parked a schedule (:meth:`tickwork.abc.Store.park`): the one-line text users
    read and its :class:`FaultKind`."""

    text: str
    kind: FaultKind = FaultKind.ERROR


@dataclass(frozen=True)
class SkippedFire:
    """A fire time that was passed over, as recorded in the history with ``status = skipped``
    (what :meth:`tickwork.engine.listener.EngineListener.fires_skipped` and the
    ``tickwork_fires_skipped`` hook receive)."""

    schedule: str
    scheduled_for: datetime
    reason: str
    #: The namespace of the schedule (docs/teams.md).
    namespace: str = DEFAULT_NAMESPACE


@dataclass(frozen=True)
class Admission:
    """A claimed fire of a schedule with a concurrency bound asking to start
    (:meth:`tickwork.abc.Store.admit`; docs/claim-protocol.md#concurrent-runs).

    :param claim: the claim, still held (its run row ``running``)
    :param release: release the schedule as the run starts (``overlap = "allow"``): its row
        becomes idle with ``next_fire`` and ``skipped`` recorded, and the run goes on by itself
    :param next_fire: the schedule's next fire, with ``release``
    :param skipped: fire times passed over on the way, with their reasons, with ``release``
    :param namespace_limit: the ``max_concurrent`` of the schedule's namespace
        (``[namespaces.NAME]``; docs/teams.md#limits), ``None``: no limit
    """

    claim: Claim
    release: bool
    next_fire: datetime | None = None
    skipped: tuple[tuple[datetime, str], ...] = ()
    namespace_limit: int | None = None

    @property
    def max_running(self) -> int | None:
        """The schedule's own bound: ``max_concurrent`` of an ``allow`` schedule (a ``skip``
        schedule holds its claim while it runs: one at a time anyway)."""
        spec = self.claim.spec
        return spec.max_concurrent if spec.overlap.runs_beside else None

    def refusal(self, running: int, keyed: int, namespaced: int = 0) -> str | None:
        """Why the fire may not start with ``running`` other runs of its schedule, ``keyed``
        other runs carrying its concurrency key and ``namespaced`` other runs of its namespace
        (admitted ones, by the database), or ``None``."""
        spec = self.claim.spec
        if self.max_running is not None and running >= self.max_running:
            return f"max_concurrent {spec.max_concurrent} reached"
        if spec.concurrency_key is not None and keyed >= (spec.concurrency_limit or 1):
            return f"concurrency key {spec.concurrency_key} at its limit {spec.concurrency_limit or 1}"
        if self.namespace_limit is not None and namespaced >= self.namespace_limit:
            return (
                f"namespace {spec.namespace} at its limit [namespaces.{spec.namespace}] "
                f"max_concurrent = {self.namespace_limit}"
            )
        return None


#: What :meth:`tickwork.abc.Store.admit` returns when the claim was no longer held.
ADMISSION_FENCED = "its claim was taken over before it started"


#: Where a recorded error's traceback starts (``format_exception``'s text, whole or cut).
TRACEBACK_MARKERS = ("\nTraceback (most recent call last):", "\n... [traceback cut] ...")


def split_error(error: str | None) -> tuple[str | None, str | None]:
    """A recorded error as (summary, traceback): ``ValueError: no`` and the ``Traceback (most
    recent call last): ...`` text after it, or the whole text and ``None`` when it holds no
    traceback (a timeout, an HTTP status)."""
    if error is None:
        return None, None
    starts = [i for i in (error.find(m) for m in TRACEBACK_MARKERS) if i >= 0]
    if not starts:
        return error, None
    return error[: min(starts)], error[min(starts) + 1 :]


@dataclass(frozen=True)
class RunRecord:
    """One row of the run history."""

    id: int
    schedule: str
    scheduled_for: datetime
    started_at: datetime | None
    finished_at: datetime | None
    node: str | None
    status: RunStatus
    error: str | None
    attempt: int = 1
    #: For a hand-off (the Celery, RQ and Dramatiq executors), the queue's worker that reported
    #: it started (``celery@host``, an RQ worker's name, ``host:pid`` for Dramatiq); ``None`` for
    #: a run the node ran itself, or a hand-off no worker has started.
    worker: str | None = None
    #: The schedule's version (:class:`ScheduleVersion`) this run fired under: the definition of
    #: the schedule when the fire was claimed; ``None`` for runs recorded before versions were.
    version: int | None = None
    #: The namespace of its schedule (docs/teams.md).
    namespace: str = DEFAULT_NAMESPACE

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "schedule": self.schedule,
            "namespace": self.namespace,
            "scheduled_for": iso_z(self.scheduled_for),
            "started_at": iso_z(self.started_at),
            "finished_at": iso_z(self.finished_at),
            "status": self.status.value,
            "node": self.node,
            "worker": self.worker,
            # The summary and the traceback apart: a script wants one or the other, not to split them.
            "error": split_error(self.error)[0],
            "traceback": split_error(self.error)[1],
            "attempt": self.attempt,
            "version": self.version,
        }


@dataclass(frozen=True)
class ScheduleVersion:
    """One version of a schedule's definition (docs/cli.md#versions): written by the store in
    the transaction of every write that changes the definition (adds, updates, a declaration's
    sync, an import, a revert), never by a pause, resume, enable or disable, which change its
    state.

    :param schedule: the schedule's name
    :param version: 1, 2, ... per schedule
    :param at: when it was written (database clock)
    :param by: who wrote it: an operator's name (the CLI's OS user, the dashboard's token or
        session name), ``"code"`` for a declaration's sync; ``None`` when the caller named nobody
    :param changes: each changed field of the definition: ``{"field": {"old": ..., "new": ...}}``
        (JSON values; ``old`` is ``None`` for a schedule's first version)
    :param definition: the whole definition after this version, as JSON: what a revert restores
    """

    schedule: str
    version: int
    at: datetime
    by: str | None
    changes: dict[str, dict[str, Any]]
    definition: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {
            "schedule": self.schedule,
            "version": self.version,
            "at": iso_z(self.at),
            "by": self.by,
            "changes": self.changes,
            "definition": self.definition,
        }


@dataclass(frozen=True)
class NodeRecord:
    """A node's row in the store (:meth:`tickwork.abc.Store.nodes`); the admin API's
    :class:`tickwork.admin.info.NodeInfo` adds its heartbeat age and liveness."""

    id: str
    started_at: datetime
    heartbeat_at: datetime
    #: The executor names the node has configured (:meth:`tickwork.abc.Store.announce_executors`),
    #: sorted; ``None`` when it did not publish them (a node of an older tickwork, or a store that
    #: cannot keep them).
    executors: tuple[str, ...] | None = None


@dataclass(frozen=True)
class SchedulePlan:
    """The schedule writes of one :meth:`~tickwork.abc.Store.write_schedules` call.

    ``create`` are new schedules, first due at their next fire after the database clock read
    when their batch is written; ``retrigger`` are definitions whose next fire is recomputed the
    same way; ``update`` are definitions whose stored next fire is kept; ``remove`` are the
    schedules (``(namespace, name)``) deleted with their history.
    """

    create: tuple[ScheduleSpec, ...] = ()
    update: tuple[ScheduleSpec, ...] = ()
    retrigger: tuple[ScheduleSpec, ...] = ()
    remove: tuple[ScheduleKey, ...] = ()
    #: Schedules ((namespace, name)) whose version after these writes is recorded as the one an
    #: apply left them at (:attr:`Schedule.applied_version`; ``tickwork apply``), in the same
    #: transaction.
    applied: tuple[ScheduleKey, ...] = ()


class Health(Choice):
    """A schedule's health state (see docs/observability.md and :mod:`tickwork.admin.health`)."""

    HEALTHY = "healthy"
    LATE = "late"
    FAILING = "failing"
    #: Its latest hand-off was not reported started by any worker within ``pickup_timeout``.
    STUCK = "stuck"
    OVERDUE = "overdue"
    PAUSED = "paused"
    PARKED = "parked"

    @property
    def alerting(self) -> bool:
        """Whether a schedule in this state needs someone's attention: every state but
        ``healthy`` and ``paused`` (a pause by tickwork itself after failures does too: see
        :attr:`ScheduleHealth.alerting`). Named by exclusion, so a state added later alerts."""
        return self not in (Health.HEALTHY, Health.PAUSED)


@dataclass(frozen=True)
class ScheduleHealth:
    """One schedule's health.

    :param state: the health state
    :param reason: why, in words (for healthy ones: the last success)
    :param last_success: when its latest successful run finished
    :param last_failure: when its latest failed or timed-out run finished
    :param consecutive_failures: failed or timed-out runs since the latest success, all of
        them (not only those of the recent window)
    :param usual_duration: median seconds of its recent successful runs, ``None`` without any
    :param alerting: whether it needs someone's attention (``None``: as its state says,
        :attr:`Health.alerting`); a schedule tickwork paused after failures is ``paused`` and alerting
    :param pause: why it is paused, when it is (the note, who, since and until when)
    """

    state: Health
    reason: str
    last_success: datetime | None = None
    last_failure: datetime | None = None
    consecutive_failures: int = 0
    usual_duration: float | None = None
    alerting: bool = None  # type: ignore[assignment]  # set from the state when not given
    pause: Pause | None = None

    def __post_init__(self) -> None:
        if self.alerting is None:
            object.__setattr__(self, "alerting", self.state.alerting)

    @property
    def healthy(self) -> bool:
        return self.state is Health.HEALTHY

    def as_json(self) -> dict[str, Any]:
        # The pause is not repeated here: the schedule's own JSON has it (``pause``).
        return {
            "state": self.state.value,
            "reason": self.reason,
            "last_success": iso_z(self.last_success),
            "last_failure": iso_z(self.last_failure),
            "consecutive_failures": self.consecutive_failures,
            "usual_duration": self.usual_duration,
            "alerting": self.alerting,
        }


@dataclass(frozen=True)
class HealthChange:
    """A schedule's health changed (what ``tickwork_health_changed`` receives).

    :param schedule: the schedule's name
    :param old: its state before (for a ``repeat``: the same state as ``new``)
    :param new: its state now, with the reason and the facts (:class:`ScheduleHealth`)
    :param at: when the change was seen (database clock)
    :param kind: what the announcement is (:class:`AlertKind`); not given: ``firing`` when the new
        state is alerting, ``resolved`` when the old one was, else ``changed``
    :param since: since when the schedule is in this state, as first announced (a ``repeat``
        tells it; else ``at``)
    """

    schedule: str
    old: Health
    new: ScheduleHealth
    at: datetime
    kind: AlertKind = None  # type: ignore[assignment]  # derived from the states when not given
    since: datetime | None = None

    def __post_init__(self) -> None:
        if self.kind is None:
            if self.new.alerting:
                kind = AlertKind.FIRING
            elif self.old.alerting:
                kind = AlertKind.RESOLVED
            else:
                kind = AlertKind.CHANGED
            object.__setattr__(self, "kind", kind)
        if self.since is None:
            object.__setattr__(self, "since", self.at)

    def as_json(self) -> dict[str, Any]:
        return {
            "schedule": self.schedule,
            "old": self.old.value,
            "at": iso_z(self.at),
            "kind": self.kind.value,
            "since": iso_z(self.since),
            **self.new.as_json(),
        }


class AlertKind(Choice):
    """What a :class:`HealthChange` announces, as Alertmanager says it."""

    #: The schedule entered a state that needs attention (or moved between two such states).
    FIRING = "firing"
    #: It left a state that needed attention for one that does not.
    RESOLVED = "resolved"
    #: Still in the same state that needs attention, announced again after ``[health] repeat_interval``.
    REPEAT = "repeat"
    #: Between two states that need no attention (``healthy`` and ``paused``).
    CHANGED = "changed"


@dataclass(frozen=True)
class Announcement:
    """The health state last announced for a schedule (``tickwork_health_changed``), kept by
    the store so that every node, and a node after a restart, knows what was already said.

    :param schedule_id: the schedule
    :param state: the announced state's value (text: a state a newer tickwork wrote stays readable)
    :param alerting: whether that state needed attention (:attr:`ScheduleHealth.alerting`)
    :param since: when this state was first announced
    :param at: when it was last announced (a repeat moves it)
    :param version: the fence: each announcement moves it on, and one lands only on the version read
    """

    schedule_id: int
    state: str
    alerting: bool
    since: datetime
    at: datetime
    version: int


@dataclass(frozen=True)
class AnnouncementClaim:
    """One announcement to record (:meth:`tickwork.abc.Store.claim_announcements`): ``state`` at
    ``at`` (the sweep's database clock), on top of ``before`` (``None``: nothing was announced for
    the schedule yet). A repeat keeps ``before.since``; any other claim starts it at ``at``."""

    schedule_id: int
    state: str
    alerting: bool
    before: Announcement | None
    at: datetime
    repeat: bool = False

    def __post_init__(self) -> None:
        _check_aware("at", self.at)


class Role(enum.StrEnum):
    """What a token may do, each role everything the one before it may: ``viewer`` reads,
    ``operator`` also acts on schedules' state and runs, ``admin`` also changes definitions."""

    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return list(Role).index(self)

    def allows(self, needed: Role) -> bool:
        return self.rank >= needed.rank


@dataclass(frozen=True)
class ApiToken:
    """A stored API token, never with its secret. ``namespaces`` empty: every namespace."""

    name: str
    role: Role
    namespaces: tuple[str, ...]
    created_at: datetime
    created_by: str | None = None
    #: The SHA-256 digest of the secret, hex (what the store keeps and looks up).
    digest: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "role": self.role.value,
            "namespaces": list(self.namespaces),
            "created_at": iso_z(self.created_at),
            "created_by": self.created_by,
        }
