"""The ``sentry`` plugin: Sentry Crons check-ins for every run of every schedule."""
