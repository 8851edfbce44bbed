"""The checks every configuration value goes through: its TOML type, ``${ENV}`` references and the
near miss suggested for an unknown name (used by the declarations and by plugins' ``options``)."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

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


#: Query parameters of a URL that hold a password (libpq's, and the common spelling).
_SECRET_PARAMETERS = frozenset({"password", "sslpassword", "pass", "token", "secret"})


def mask_url(url: str) -> str:
    """``url`` with the password of its user info and of its query (``?password=``) as ``***``;
    a text that is no URL is kept as it is."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "***"  # unparseable: it may hold anything
    netloc = parts.netloc
    if password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:***@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(k.lower() in _SECRET_PARAMETERS for k, _ in pairs):
            query = urlencode([(k, "***" if k.lower() in _SECRET_PARAMETERS else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
