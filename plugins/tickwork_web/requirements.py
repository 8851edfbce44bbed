"""The ``web`` extra's packages: checked before anything imports them, so a missing one is a
one-line error with the install command instead of an ImportError traceback."""

from __future__ import annotations

import importlib.util

from tickwork.errors import ConfigError

#: Import name -> distribution name of what ``tickwork[web]`` installs.
PACKAGES = {"starlette": "starlette", "jinja2": "jinja2", "uvicorn": "uvicorn", "multipart": "python-multipart"}


def missing() -> list[str]:
    """Distributions of the ``web`` extra that cannot be imported."""
    return [dist for module, dist in PACKAGES.items() if importlib.util.find_spec(module) is None]


def require() -> None:
    """:raises tickwork.ConfigError: naming the missing packages and the install command"""
    absent = missing()
    if absent:
        raise ConfigError(
            f"the web dashboard needs {', '.join(absent)}, which "
            f"{'is' if len(absent) == 1 else 'are'} not installed: pip install 'tickwork[web]'"
        )
