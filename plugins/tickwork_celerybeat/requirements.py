"""The ``celery`` extra: checked before anything imports Celery, so a missing package is one
error line with the install command instead of an ImportError traceback."""

from __future__ import annotations

import importlib.util

from tickwork.errors import ConfigError


def require() -> None:
    """:raises tickwork.ConfigError: if Celery is not installed"""
    if importlib.util.find_spec("celery") is None:
        raise ConfigError(
            "importing Celery beat schedules needs Celery, which is not installed: pip install 'tickwork[celery]'"
        )
