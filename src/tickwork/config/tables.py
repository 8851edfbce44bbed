"""The core's tables, each key declared once (type, default, range, help), and
:class:`ConfigTables`: every table a configuration may have, the core's and those plugins declare.

What is declared here is what the parser accepts, what ``config.scheduler`` holds, what the engine
runs with (:class:`tickwork.engine.EngineSettings` is built from :class:`SchedulerConfig`), what
``Node.from_config(**overrides)`` takes, and what docs/configuration.md lists (its key tables are
rendered from here: ``python -m tickwork.config.reference --write docs/configuration.md``).

Where the copies of a range used to disagree, the one the reference promised was kept:
``hard_timeout_grace`` is 1 s to 1 year (the engine accepted anything above 0: a grace under a
second reaps a live run over scheduling jitter) and ``reap_interval`` and ``renew_interval`` are
0.1 s to a day (the engine accepted anything above 0: a reaper every millisecond hammers the store).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from ..errors import ConfigError, ConfigProblems
from ..structures import DEFAULT_NAMESPACE, MisfirePolicy, NamespaceLimits, check_namespace
from .calendars import (
    COUNTRY_SPEC,
    CalendarDefinition,
    check_country,
    parse_dates,
    parse_workdays,
)
from .declarations import (
    Choice,
    ChoiceTable,
    EnumChoice,
    Integer,
    NamedTables,
    Number,
    OptionalInteger,
    OptionalStrings,
    OptionalText,
    Section,
    Setting,
    Strings,
    Table,
    Text,
)
from .numbers import DAY, YEAR


def _namespace(where: str, name: str) -> None:
    try:
        check_namespace(name)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def default_node_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class SchedulerConfig(Section, table="scheduler"):
    """The ``[scheduler]`` table: how this node runs. Every key is optional."""

    def validate(self, where: Callable[[str], str]) -> None:
        _namespace(where("namespace"), self.namespace)
        for name in self.namespaces or ():
            _namespace(where("namespaces"), name)

    jobs = Strings(
        items="module names",
        help="Modules that declare jobs with `@tickwork.cron`, `@tickwork.calendar`, `@tickwork.every` or "
        "`@tickwork.schedule`.",
        details="At node start each is imported and the store is made to hold exactly the jobs it (and its "
        "submodules) declares: new ones are created, changed ones updated, removed ones deleted. Modules are "
        "imported from the working directory and `sys.path`.",
    )
    namespace = Text(
        DEFAULT_NAMESPACE,
        nonblank=True,
        help="The namespace of the jobs this node declares in code (`jobs`), unless a decorator names its own.",
        details="Names are unique within a namespace; see [teams.md](teams.md).",
    )
    namespaces = OptionalStrings(
        items="namespace names",
        help="The namespaces whose schedules this node fires; not set: every namespace.",
        details='Dedicated nodes per team: a node with `namespaces = ["billing"]` claims, runs and backfills '
        "only that namespace's fires, and another node must serve the rest. See [teams.md](teams.md).",
    )
    node_id = Text(
        factory=default_node_id,
        shown_default="`<hostname>-<pid>`",
        nonblank=True,
        help="This node's identity in claims, the run history and `tickwork nodes`.",
        details="Must be unique among running nodes: a node whose id is used by another live process refuses to "
        "start (`tickwork: error: node id ... is in use by a live node`, exit 1). A record whose heartbeat is "
        "recent but no longer advances is a predecessor that crashed: the start waits for it to go stale (at most "
        "`node_ttl`) and then takes over. A node that starts with an id that still holds claims (a restart with a "
        "fixed id) releases them at once and records their runs as `abandoned`; with the default id, a dead "
        "node's claims are released by the hard-timeout reaper instead.",
    )
    max_sleep = Number(
        60,
        low=0,
        high=DAY,
        low_open=True,
        help="Longest time, in seconds, the node sleeps between checks for due schedules.",
        details="Changes made by other nodes or the CLI wake it earlier (PostgreSQL `LISTEN/NOTIFY`, SQLite file "
        "polling), so this only bounds how long a change can go unnoticed if a notification is lost.",
    )
    misfire = EnumChoice(
        MisfirePolicy,
        MisfirePolicy.SKIP,
        help="What to do with fire times that passed while no node could run them.",
        details="`skip`: a fire claimed more than `misfire_grace` seconds late is recorded as `skipped` and the "
        "schedule moves on to its next fire after now. `once`: a late fire runs once, however late; the other "
        "missed times are recorded as `skipped`. `all`: missed fire times at most `misfire_grace` seconds old are "
        "each run, one after another; older ones are recorded as `skipped`. A schedule can override it "
        "(`misfire=` on the decorator, `--misfire` on `tickwork jobs add`).",
    )
    misfire_grace = Number(
        30,
        low=0,
        high=YEAR,
        low_open=True,
        help="Seconds a fire may be late and still count as on time (see `misfire`).",
    )
    hard_timeout_grace = Number(
        60,
        low=1,
        high=YEAR,
        help="Seconds past a run's own timeout after which its claim is considered dead.",
        details="The node that runs it records it as `timed_out` if the executor has not reported by then; any "
        "node's reaper releases the claim of a node that stopped renewing it (crashed) once `timeout + "
        "hard_timeout_grace` has passed since its last renewal.",
    )
    reap_interval = Number(
        15,
        low=0.1,
        high=DAY,
        help="Seconds between a node's checks for dead claims (see `hard_timeout_grace`), and between its reconciles.",
        details="A reconcile releases the claims a node holds in the store but no longer tracks (an answer lost "
        "to a database error) and records their runs `abandoned` ([architecture.md](architecture.md#faults)).",
    )
    renew_interval = Number(
        10,
        low=0.1,
        high=DAY,
        help="Seconds between renewals of the claims of this node's running jobs.",
        details="Renewing keeps long runs from being reaped while the node is alive. Keep it well below the "
        "shortest job timeout plus `hard_timeout_grace`.",
    )
    max_in_flight = Integer(
        1000,
        low=1,
        high=1_000_000,
        help="Most runs this node has in flight at once, fires held for their time included.",
        details="When it is full the node claims nothing until a run ends; due schedules wait for a node with room. "
        "A fire for an executor that hands off (celery, rq, dramatiq) counts as a tenth of a run "
        "([hand-off](handoff.md#options)).",
    )
    lookahead = Number(
        1,
        low=0,
        high=60,
        help="Claim fires due within this many seconds ahead of time and start each one from memory at its due "
        "time (by the database clock, never before it).",
        details="The claim round trip is then no longer between the due time and the start. `0` claims when due. "
        "With 1,000 schedules due on the same second across 3 nodes, `1` takes the p99 start lag from about "
        "60 to 80 ms to about 15 ms; see [benchmarks](benchmarks.md#steady-lag). A fire claimed ahead is held like "
        "any claim (no other node runs it) and counts against `max_in_flight`; claiming begins once a fire is due "
        "within about half the lookahead (less a random 0 to 2 % of it, so that the nodes that may run a fire take "
        "turns instead of the quickest taking all), and one claim gathers what came due meanwhile. A node that "
        "stops gives its held fires back so another node runs them on time; a node that dies holding them has "
        "them taken over by another node once their start deadline passes (`start_grace`) and run there, late "
        "but exactly once: the start of a held fire is a fenced write that a cut-off, frozen or slow node cannot "
        "make after that ([claim-protocol.md](claim-protocol.md#fenced-starts)).",
    )
    start_grace = Number(
        0.5,
        low=0.05,
        high=60,
        help="Seconds past its due time (database clock) until which a fire claimed ahead (`lookahead`) may "
        "still start on the node that claimed it; after that any node takes it over and runs it.",
        details="One statement records the starts of the held fires due within `start_lead` (a start window), "
        "and lands only for fires still held by this node and within this deadline; a fire whose start is refused "
        "is not run here. Every node checks every `takeover_interval` for held fires past their deadline and "
        "gives them back, so that the next claim (their other owner's, or any node's after `steal_after`) runs "
        "them. A node that dies holding fires claimed ahead therefore delays them by at most about "
        "`start_grace + takeover_interval`, instead of losing them. Keep it well above a loop pass "
        "(`start_batch_window` plus a claim's round trip): a healthy node that misses it only hands its fire "
        "to another node, later. Give all nodes of a cluster the same value.",
    )
    takeover_interval = Number(
        0.2,
        low=0.01,
        high=3600,
        help="Seconds between a node's checks for fires claimed ahead by any node that did not start by their "
        "deadline (see `start_grace`).",
        details="A check rides on this node's start statement when one goes out from half the interval after "
        "the last check on (on PostgreSQL in the same statement; elsewhere in the same call), and is a statement of "
        "its own when none went out for a full interval, so checks are never further apart than this "
        "([claim-protocol](claim-protocol.md#start-windows)). It reads the running schedules (a partial index); rows "
        "another database session holds locked are passed over and checked again next time.",
    )
    history_retention_days = Number(
        30,
        low=0,
        high=36500,
        help="Finished runs older than this many days are deleted from the history (checked hourly); `0` keeps "
        "the history forever.",
        details="A row that still fences a fire (at or after its schedule's next fire, e.g. an abandoned one) is "
        "kept whatever its age, so that fire never runs twice.",
    )
    default_executor = Text(
        "local",
        help="Executor used by `tickwork jobs add` without `--executor`.",
        details="It is always built at node start, even without an `[executor.NAME]` table. (Jobs declared in "
        'code name their executor with `executor=`, default `"local"`.)',
    )
    end_batch_window = Number(
        0.1,
        low=0,
        high=1,
        help="Seconds a run's end may wait in memory for other ends, so that they are written with one statement "
        "and one commit.",
        details="A spread load otherwise costs a statement per fire. The history records when the run really "
        "ended, not when its end was written. An end is never held past the moment its schedule's next fire could "
        "be claimed; a full batch (`batch_size` of the store), a parked schedule, and the ends of a node with no "
        "other run in flight and nothing due to start within the window (no other end can join them) are written "
        "at once, and a stopping node writes what it holds. Gathered ends also ride on this node's next start "
        "statement when one goes out first (`lookahead`, [start windows](claim-protocol.md#start-windows)): "
        "written sooner, and without a statement of their own. `0` writes each pass's ends at once. "
        "While an end waits, its "
        "schedule shows `running` and its run has no end in the history yet; see "
        "[benchmarks](benchmarks.md#spread-load-second-round-fewer-passes-exact-end-times) and, for the default "
        "of 0.1, [the third round](benchmarks.md#spread-load-third-round-a-longer-end-window).",
    )
    start_batch_window = Number(
        0.015,
        low=0,
        high=1,
        help="Seconds past its due time that a fire claimed ahead (`lookahead`) may wait so that the fires due by "
        "then start in one pass of the loop instead of a pass each.",
        details="It is the most such a fire starts late; no fire ever starts early. At 1,000 fires a second over "
        "3 nodes (`hashring`, `end_batch_window = 0.05`), `0.015` instead of `0.005` took node CPU per 1,000 "
        "fires from 0.295 s to 0.220 s in one run each, and the p99 start lag from 10 to 13 ms to 16 ms "
        "([benchmarks](benchmarks.md#spread-load-second-round-fewer-passes-exact-end-times)). `0` wakes at each "
        "fire's own time. Fires claimed when due (a backlog, `lookahead = 0`) start at once whatever this is.",
    )
    start_lead = Number(
        0.05,
        low=0,
        high=1,
        help="Seconds before its due time that the start of a fire claimed ahead (`lookahead`) may be recorded, "
        "so that the fenced start's round trip is not between the due time and the run; the run itself starts "
        "at its due time (by the database clock), never before it.",
        details="One start statement records the starts of every held fire due within this lead; it goes out "
        "once the earliest of them is about 1.5 of its round trips away (at least 5 ms, at most half the lead), "
        "so one statement covers most of a lead of fires "
        "([claim-protocol](claim-protocol.md#start-windows)). "
        "The granted fire waits in memory for its time, and runs only if the node is still healthy and "
        "was not declared dead meanwhile. The price: a node that dies in the last `start_lead` seconds before a "
        "fire whose start it recorded loses that fire like a run cut off (`abandoned` once the node is found "
        "dead) instead of having it taken over and run elsewhere. At 1,000 fires due on the same second over 3 "
        "nodes on PostgreSQL, the start statement takes 16-34 ms, which `0` adds to every fire's lag "
        "([benchmarks](benchmarks.md#fenced-starts-at-1000-fires-at-once)). Keep it below `start_grace`.",
    )
    steal_after = Number(
        0.25,
        low=0,
        high=YEAR,
        low_open=True,
        help="Seconds a fire may be overdue, by the database clock, before a node claims it although it does not "
        "own the fire's bucket.",
        details="Only `hashring` restricts buckets; other memberships attempt every bucket anyway. A fire whose "
        "owners are behind (a burst that one owner drains slower, an overloaded or stalled owner) is then shared "
        "by every node like under `all`; a fire whose owners keep up is never taken by others. A node learns of "
        "such a fire when it next reads what is due: often while it has fires of its own, but a node with nothing "
        "of its own due for a while reads only every `max_sleep` seconds or when a change is notified. A fire "
        "claimed and held by its owner (`lookahead`) stays with that owner. Set a large value (e.g. `86400`) to "
        "keep every fire with its owners. See [cluster.md](cluster.md#ownership).",
    )
    shutdown_grace = Number(
        30,
        low=0,
        high=DAY,
        help="Seconds a stopping node (SIGINT/SIGTERM, `Node.stop()`, the end of a `with` block) waits for its "
        "running jobs to end.",
        details="It logs which jobs it waits for. Runs still going after that are recorded `abandoned` and their "
        "claims released. A second SIGINT/SIGTERM stops at once the same way. Keep it below the time your "
        "supervisor waits before SIGKILL (Kubernetes `terminationGracePeriodSeconds`, systemd `TimeoutStopSec`); "
        "see [deployment.md](deployment.md#stopping).",
    )


class PluginsConfig(Section, table="plugins"):
    """The ``[plugins]`` table: read before any plugin is loaded."""

    block = Strings(
        items="plugin names",
        help='Entry-point names not to load, e.g. `["http"]` to run without `httpx` installed, or to disable a '
        "third-party plugin.",
        details="A blocked plugin is never imported. What it registered is then unknown, and naming it is an "
        "error listing what is left; a table it declares (`[metrics]`, `[web]`) is refused with a message "
        "saying the plugin is blocked.",
    )


class LoggingConfig(Section, table="logging"):
    """The ``[logging]`` table; applied by ``tickwork run``, never by an embedded node."""

    format = Choice(
        ("text", "json"),
        "text",
        help="`json`: one JSON object per line on stderr.",
        details="Each has `time`, `level`, `logger`, `message`, and for run records `schedule`, `scheduled_for`, "
        "`run_id`, `node`; a failed run's record has `traceback`. See "
        "[observability.md](observability.md#logs).",
    )


class HealthConfig(Section, table="health"):
    """The ``[health]`` table: when a schedule counts as unhealthy (``tickwork check``, ``jobs
    list``, the dashboard, the metrics, the notifications)."""

    max_failures = Integer(
        1,
        low=1,
        high=1000,
        help="Failed or timed-out runs in a row that make a schedule `failing`.",
        details="`tickwork check --max-failures` overrides it for one check. See "
        "[observability.md](observability.md#schedule-health).",
    )
    overdue_margin = Number(
        60.0,
        low=0,
        high=YEAR,
        help="Seconds a schedule's next fire may pass, by the database clock, without a node claiming it before "
        "the schedule is `overdue`; also the slack before a run is `late`.",
        details="Set it above the longest pause you accept (a node restart, a deploy). `tickwork check "
        "--overdue-margin` overrides it for one check.",
    )
    late_factor = Number(
        2.0,
        low=1,
        high=1000,
        help="A run in progress for longer than this many times the median of the schedule's recent successful "
        "runs (plus `overdue_margin`) is `late`.",
    )
    watch_interval = Number(
        10.0,
        low=0.1,
        high=3600,
        low_open=False,
        help="Seconds between two health sweeps of the node that reports health changes (only when a plugin "
        "implements `tickwork_health_changed`, such as `[notify]`).",
        details="One live node (the lowest node id) sweeps every schedule; see "
        "[observability.md](observability.md#health-changes).",
    )
    repeat_interval = Number(
        4 * 3600.0,
        low=0,
        high=YEAR,
        help="Seconds after which a schedule still in a state that needs attention (`failing`, `overdue`, ...) "
        "is announced again (`tickwork_health_changed`, `[notify]`); 0: never again.",
        details="Counted from the last announcement, kept in the database, so a node restart or a new sweeping "
        "node neither repeats early nor forgets. See [notify.md](notify.md#state-based-announcements).",
    )


class StoreSettings(Section, table="store"):
    """What every store's options have: the base of each store's :attr:`~tickwork.abc.Store.section`."""

    batch_size = Integer(
        100,
        low=1,
        high=100_000,
        help="Most schedules one claim statement takes when it reaches ahead of their time, or a fire waiting "
        "on the node is due soon; with a backlog due now, a node's claims grow to ten times this "
        "([claim size](claim-protocol.md#claim-size)).",
        details="Larger batches cost fewer statements per fire when many schedules are due at once; smaller ones "
        "spread a burst over more nodes.",
    )


STORE = ChoiceTable(
    "store",
    Text(
        "sqlite",
        help="A registered store: `sqlite`, `postgres`, `mysql`, or one added by a plugin.",
        details="The table's other keys are that store's options (below).",
    ),
)

MEMBERSHIP = ChoiceTable(
    "membership",
    Text(
        "single",
        help="A registered membership: which schedules this node attempts.",
        details="`single`: this node attempts every schedule (one node, or several nodes that all compete "
        "through the claim strategy). `hashring`: live nodes form a consistent hash ring and each schedule is "
        "attempted by its two owners only — the choice for clusters ([cluster.md](cluster.md)). `all`: every "
        "node attempts every schedule; kept to measure the cost of that against sharing. The table's other keys "
        "are that membership's options (below).",
    ),
)

EXECUTOR = NamedTables("executor")


S = TypeVar("S", bound=Section)


class CalendarConfig(Section, table="calendars"):
    """One ``[calendars.NAME]`` table: a business-day calendar that schedules name in their
    ``holidays`` option (docs/holidays.md). Needs the ``tickwork[holidays]`` extra when it names
    a country."""

    country = OptionalText(
        nonblank=True,
        help="Country whose public holidays are days off: the holidays package's code (`DE`, `US`, `GB`).",
        details="Not set: no public holidays, only `extra` and the days outside `workdays`.",
    )
    subdiv = OptionalText(
        nonblank=True,
        help="Subdivision of `country` whose holidays apply too, as the holidays package names it (`BE`, `NY`).",
    )
    extra = Strings(items="dates (YYYY-MM-DD)", help='Further days off, e.g. `["2026-12-24", "2026-12-31"]`.')
    workdays = OptionalText(
        nonblank=True,
        shown_default="the country's working week (Mon..Fri without `country`)",
        help="The working week: `Mon..Fri`, `Sun..Thu` or `Mon,Tue,Thu`.",
        details="Set, it replaces the country's weekend, and the weekend days a country declares worked no "
        "longer count as workdays.",
    )

    def validate(self, where: Callable[[str], str]) -> None:
        if self.subdiv is not None and self.country is None:
            raise ConfigError(f"{where('subdiv')}: needs a country")
        if self.country is not None:
            check_country(where("country"), self.country, self.subdiv, where("subdiv"))
        parse_dates(where("extra"), self.extra)
        if self.workdays is not None:
            parse_workdays(where("workdays"), self.workdays)

    def definition(self, name: str) -> CalendarDefinition:
        """The calendar this table declares under ``name``."""
        return CalendarDefinition(
            name,
            self.country,
            self.subdiv,
            parse_dates(f"calendars.{name}.extra", self.extra),
            None if self.workdays is None else parse_workdays(f"calendars.{name}.workdays", self.workdays),
        )


class NamedSections(Generic[S]):
    """``[TABLE.NAME]`` tables, any number, each with the keys of one :class:`Section`
    (``[calendars.company]``)."""

    def __init__(self, section: type[S], check_name: Callable[[str, str], None]) -> None:
        self.section = section
        self.table = section.table
        #: ``(where, name)``: raises :class:`ConfigError` for a table name that may not be used.
        self.check_name = check_name

    def settings(self) -> dict[str, Setting[Any]]:
        return self.section.settings()

    def from_toml(self, source: str, raw: Mapping[str, Any]) -> dict[str, S]:
        tables: dict[str, S] = {}
        problems = []
        for name, value in raw.items():
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: {self.table}.{name}: must be a table ([{self.table}.{name}])")
            try:
                self.check_name(f"{source}: {self.table}.{name}", name)
                tables[name] = self.section.from_toml(source, value, table=f"{self.table}.{name}")
            except ConfigProblems as exc:
                problems += exc.problems
            except ConfigError as exc:
                problems.append(str(exc))
        if len(problems) == 1:
            raise ConfigError(problems[0])
        if problems:
            raise ConfigProblems(f"{source}: [{self.table}] has {len(problems)} problems", problems)
        return tables


def _calendar_name(where: str, name: str) -> None:
    if COUNTRY_SPEC.fullmatch(name):
        raise ConfigError(
            f"{where}: the name looks like a country calendar ('DE', 'DE-BE'), which "
            "a schedule's holidays would name instead; use a lower-case name such as 'company'"
        )


CALENDARS = NamedSections(CalendarConfig, _calendar_name)


class NamespaceConfig(Section, table="namespaces"):
    """One ``[namespaces.NAME]`` table: the limits of a namespace (docs/teams.md#limits). A
    namespace needs no table; one without is unlimited."""

    max_schedules = OptionalInteger(
        low=0,
        high=100_000_000,
        shown_default="no limit",
        help="Most schedules the namespace holds: an add past it is refused, naming this limit.",
        details="Counted in the add's transaction (the writes of one namespace take turns), so two adds at once "
        "cannot both pass it. Schedules stored before the limit was set stay.",
    )
    max_concurrent = OptionalInteger(
        low=1,
        high=1_000_000,
        shown_default="no limit",
        help="Most runs of the namespace's schedules at once across the cluster.",
        details="Like a concurrency key shared by every schedule of the namespace: a fire due while the limit is "
        "reached is recorded `skipped` with the reason. Every fire of such a namespace is admitted by the "
        "store before it starts (one more transaction per fire).",
    )

    def limits(self) -> NamespaceLimits:
        return NamespaceLimits(self.max_schedules, self.max_concurrent)


NAMESPACES = NamedSections(NamespaceConfig, _namespace)

#: The core's tables by name, in the reference's order. A plugin may not declare one of these.
CORE_TABLES: dict[str, Table] = {
    "scheduler": SchedulerConfig,
    "store": STORE,
    "membership": MEMBERSHIP,
    "executor": EXECUTOR,
    "calendars": CALENDARS,
    "namespaces": NAMESPACES,
    "plugins": PluginsConfig,
    "logging": LoggingConfig,
    "health": HealthConfig,
}

LOG_FORMATS = LoggingConfig.format.options


class ConfigTables:
    """Every top-level table a configuration may have: the core's (:data:`CORE_TABLES`) and those
    the loaded plugins declare. What :func:`~tickwork.plugin.specs.tickwork_add_config` receives::

        class MetricsConfig(Section, table="metrics"):
            port = Port(9464, help="TCP port of `/metrics` and `/healthz`.")

        @hookimpl
        def tickwork_add_config(tables: ConfigTables) -> None:
            tables.add(MetricsConfig)

    The plugin then reads its table with ``config.table(MetricsConfig)``.
    """

    def __init__(self) -> None:
        self._declared: dict[str, type[Section]] = {}
        self._owners: dict[str, str | None] = {}
        self._options: dict[str, type[Section]] = {}
        #: The plugin whose hook is running (set by the plugin manager): the owner of what it adds.
        self.current_plugin: str | None = None

    def add(self, section: type[Section]) -> None:
        """Declare the table ``[section.table]``, whose keys are ``section``'s settings.

        :raises ConfigError: if the name is the core's or another plugin's
        """
        name = section.table
        who = f"plugin {self.current_plugin!r}" if self.current_plugin else "a plugin"
        if not name:
            raise ConfigError(f"{who}: {section.__name__} names no table (class ...(Section, table='NAME'))")
        if name in CORE_TABLES:
            raise ConfigError(f"{who} declares the table [{name}], which is tickwork's own")
        if name in self._declared:
            first = self._owners[name]
            raise ConfigError(f"the table [{name}] is declared twice: by plugin {first!r} and by {who}")
        self._declared[name] = section
        self._owners[name] = self.current_plugin

    def add_options(self, kind: str, name: str, section: type[Section]) -> None:
        """Declare the options of the ``kind`` plugin registered as ``name`` (``store``,
        ``sqlite``): the keys of ``[store]`` besides ``plugin`` when it names ``sqlite``, of
        ``[executor.NAME]``, or of ``[membership]``. Called by the plugin manager with each
        registered class's :attr:`~tickwork.abc.Store.section`."""
        self._options[f"{kind}.{name}"] = section

    def options(self, kind: str, name: str) -> type[Section] | None:
        """The Section declaring the options of the ``kind`` plugin ``name``; ``None`` when no
        such plugin is registered."""
        return self._options.get(f"{kind}.{name}")

    @property
    def plugin_options(self) -> dict[str, type[Section]]:
        """Every registered plugin's options, by ``KIND.NAME`` (``executor.celery``)."""
        return dict(self._options)

    @property
    def plugin_tables(self) -> dict[str, type[Section]]:
        """The tables plugins declared, by name."""
        return dict(self._declared)

    def owner(self, name: str) -> str | None:
        """The plugin that declared the table ``name`` (``None`` for the core's)."""
        return self._owners.get(name)

    def names(self) -> list[str]:
        """Every table's name: the core's, then the plugins'."""
        return [*CORE_TABLES, *self._declared]

    def tables(self) -> dict[str, Table]:
        """Every table by name (what the reference renders), with each plugin's options as
        ``KIND.NAME`` (``store.mysql``, ``executor.celery``, ``membership.hashring``)."""
        return {**CORE_TABLES, **self._declared, **self._options}

    def __contains__(self, name: object) -> bool:
        return name in CORE_TABLES or name in self._declared


TablesSource = Callable[[frozenset[str]], ConfigTables]
_plugin_tables: TablesSource | None = None


def use_plugin_tables(source: TablesSource | None) -> None:
    """Where :func:`declared_tables` finds the plugins' tables: ``source(blocked)`` returns the
    tables the plugins loaded without ``blocked`` declare. Set by :mod:`tickwork.plugin.manager`
    when it is imported (this package cannot import it: the plugins depend on the configuration)."""
    global _plugin_tables
    _plugin_tables = source


def declared_tables(blocked: Iterable[str] = ()) -> ConfigTables:
    """The tables a configuration whose ``[plugins] block`` lists ``blocked`` may have (only the
    core's if no plugin manager was imported)."""
    if _plugin_tables is None:
        return ConfigTables()
    return _plugin_tables(frozenset(blocked))
