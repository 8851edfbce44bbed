"""The ``celery`` extra: checked before the import needs Celery, so a missing package is one
error line with the install command instead of an ImportError traceback."""

from __future__ import annotations

import importlib

from tickwork.errors import ConfigError


def require() -> None:
    """:raises tickwork.ConfigError: if Celery cannot be imported"""
    try:
        importlib.import_module("celery")
    except ImportError as exc:
        raise ConfigError(
            f"importing Celery beat schedules needs Celery, which cannot be imported ({exc}): "
            "pip install 'tickwork[celery]'"
        ) from exc
