"""The checks every configuration value goes through: its TOML type, ``${ENV}`` references and the
near miss suggested for an unknown name (used by the declarations and by plugins' ``options``)."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable
from typing import Any

from ..errors import ConfigError

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """`` (did you mean `max_sleep`?)`` for a near miss among ``known``; empty when none is close."""
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


def check_type(where: str, value: Any, expected: type | tuple[type, ...]) -> None:
    """:raises ConfigError: ``where: expected int or float, got str '10'`` unless ``value`` is one
    of ``expected`` (a bool is never an int here: it is never a valid number or count in a file)."""
    kinds = expected if isinstance(expected, tuple) else (expected,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise ConfigError(f"{where}: expected {names}, got {type(value).__name__} {value!r}")


def expand_env(where: str, value: Any) -> Any:
    """Replace ``${NAME}`` in strings (recursively) with environment variables."""
    if isinstance(value, str):

        def sub(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in os.environ:
                raise ConfigError(f"{where}: environment variable {name} is not set")
            return os.environ[name]

        return _ENV_REF.sub(sub, value)
    if isinstance(value, list):
        return [expand_env(where, v) for v in value]
    if isinstance(value, dict):
        return {k: expand_env(f"{where}.{k}", v) for k, v in value.items()}
    return value
