"""The ``[sentry]`` table, declared by the sentry plugin (``tickwork_add_config``)."""

from __future__ import annotations

from tickwork.config import Integer, OptionalText, Section, Text


class SentryConfig(Section, table="sentry"):
    """``[sentry]``: present, every run sends Sentry Crons check-ins (needs ``tickwork[sentry]``)."""

    dsn = OptionalText(
        help="The Sentry DSN; not set: `$SENTRY_DSN`, as sentry-sdk reads it.",
        details="Ignored when the application embedding the node already called `sentry_sdk.init()`: its client "
        "is used. See [sentry.md](sentry.md).",
    )
    environment = OptionalText(help="The Sentry environment of the check-ins (`production`, ...).")
    slug_prefix = Text(
        "",
        help="Text put before each monitor slug (the slug is the schedule name made slug-safe, at most 50 characters).",
    )
    checkin_margin = Integer(
        1,
        low=1,
        high=40_320,
        help="Minutes Sentry waits past a fire's time for its check-in before it marks the fire missed.",
    )
