"""The options of ``[executor.local]``, declared once."""

from __future__ import annotations

from tickwork.config import Choice, Integer, OptionalStrings, Section

MODES = ("thread", "process")


class LocalSettings(Section, table="executor.local"):
    """``[executor.local]`` (docs/configuration.md#executorlocal); every key optional."""

    max_workers = Integer(
        8,
        low=1,
        high=10_000,
        help="Threads for plain functions (and, in process mode, concurrent child processes).",
        details="`async def` functions share one event loop thread.",
    )
    mode = Choice(
        MODES,
        "thread",
        help="`thread` runs functions in the thread pool: a run past its timeout is recorded `timed_out`, but the "
        "thread cannot be killed and finishes in the background.",
        details="`process` runs each call in a child process that the timeout really kills. A schedule can choose "
        "for itself with the argument `_tickwork_mode`.",
    )
    allowed_modules = OptionalStrings(
        items="module names",
        help='Only targets in these packages may run, e.g. `["myapp.", "reports.jobs"]` (an entry admits that '
        "module and every module below it; `myapp.` and `myapp` mean the same).",
        details="A target outside is refused before anything is imported: by `tickwork jobs add` and when declared "
        "jobs are synced (`target 'os:system' is outside [executor.local] allowed_modules (myapp); it is not "
        "imported or run`), and again at run time (the run fails with that error), since anyone who can write the "
        "schedules table can store any target. What the target resolves to must be defined in the list too: "
        "`myapp.tasks:os.system` (a path through a module) and a function, class or `functools.partial` that "
        "`myapp.tasks` imported from elsewhere are refused. Recommended in production; see "
        "[security.md](security.md). Not set: any target.",
    )
