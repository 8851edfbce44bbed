"""The options of ``[executor.jobqueue]``, declared once (importable without a database driver)."""

from __future__ import annotations

from tickwork.config import URL, Flag, Integer, OptionalStrings, Section


class JobQueueSettings(Section, table="executor.jobqueue"):
    """``[executor.jobqueue]`` (docs/plugins.md, the worked example)."""

    url = URL(
        schemes=(),  # parse_url names what is wrong with one in detail
        example="sqlite:///jobs.db",
        help="The queue's database: `sqlite:///PATH` or `postgresql://user:password@host/db`.",
        details="A new SQLite queue file is created `0600`, like the store's.",
    )
    threads = Integer(2, low=1, high=1000, help="Threads doing the database work, so a submit never blocks the engine.")
    create_table = Flag(
        True,
        help="Create the queue table at node start when missing; with `false` it must exist already (a DBA "
        "manages the schema).",
    )
    import_targets = Flag(
        True,
        help="Import a target to check it when a schedule is added; with `false` only its `module:function` "
        "syntax is checked.",
    )
    allowed_modules = OptionalStrings(
        items="module names",
        help="Only targets in these packages are accepted and enqueued, as for `[executor.local]`; give the "
        "workers the same list with `--allowed-modules`.",
    )
