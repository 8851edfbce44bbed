"""Parsing database URLs without ever echoing them: they usually hold a password.

A URL comes from the config after ``${ENV}`` expansion, so the text of a malformed one is the
expanded password more often than not. Errors here say which part is wrong and show at most the
scheme, never the value.

:func:`masked` is the one way a URL is shown (start-up banner, ``db`` commands, errors, logs,
``Store.describe()``, the jobqueue's messages): its password is hidden wherever it can be given,
in the user info and in the query (libpq's ``?password=`` and ``?sslpassword=``, and any key that
names a secret).
"""

from __future__ import annotations

import re

from sqlalchemy import URL, make_url
from sqlalchemy.exc import ArgumentError

from ..errors import ConfigError

#: What a hidden value is shown as.
MASK = "***"
# Query keys whose values are hidden: libpq's password and sslpassword, passfile (a path, but it
# says where the password is), ODBC's pwd, and whatever names a secret, token or key.
_SECRET_KEY = re.compile(r"pass|pwd|secret|token|key", re.IGNORECASE)
# Stands for MASK while SQLAlchemy renders the URL, which would percent-encode "***".
_PLACEHOLDER = "tickworkmaskedvalue"

# A scheme is short and made of these characters; anything else may already be the secret.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,30}")


def scheme_of(url: str) -> str | None:
    """The part before the first ``:`` when it looks like a scheme (safe to show), else ``None``."""
    head, sep, _ = url.partition(":")
    return head if sep and _SCHEME.fullmatch(head) else None


def parse(url: str, where: str, example: str) -> URL:
    """Parse ``url`` into a SQLAlchemy :class:`~sqlalchemy.URL`.

    :param where: the key or option the URL came from, named in errors (``url``, ``--url``)
    :param example: the expected form, shown in errors (``postgresql://user:password@host/db``)
    :raises tickwork.errors.ConfigError: naming ``where`` and the part that is wrong, never the URL
    """
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(f"{where}: must be a database URL like {example}")
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise ConfigError(f"{where}: the database URL contains whitespace or a control character")
    scheme = scheme_of(url)
    if scheme is None:
        raise ConfigError(f"{where}: the database URL does not start with a scheme; expected {example}")
    rest = url[len(scheme) + 1 :]
    if not rest.startswith("//"):
        raise ConfigError(f"{where}: {scheme + ':'!r} must be followed by '//' (expected {example})")
    authority = rest[2:].split("/", 1)[0].split("?", 1)[0]
    if authority.count("@") > 1:
        raise ConfigError(f"{where}: the user or password of the database URL holds an '@'; write it as %40")
    host = authority.rpartition("@")[2]
    port = host.rpartition("]")[2].partition(":")[2] if host.startswith("[") else host.partition(":")[2]
    if port and not port.isdigit():
        raise ConfigError(f"{where}: the port of the database URL is not a number")
    try:
        return make_url(url)
    except (ArgumentError, ValueError):
        # SQLAlchemy's own message may quote the text; ours names only where it came from.
        raise ConfigError(f"{where}: the database URL cannot be parsed; expected {example}") from None


def secret_key(key: str) -> bool:
    """Whether the value of the query parameter ``key`` is hidden by :func:`masked`."""
    return _SECRET_KEY.search(key) is not None


def masked(url: str | URL) -> str:
    """``url`` as it may be shown: ``***`` for the password of its user info and for the value of
    every query parameter whose key names a secret (:func:`secret_key`: ``password``,
    ``sslpassword``, ``PassWord``, ``client_secret``, ``auth_token``...); the rest as given.

    A text that does not parse is shown by its scheme alone (``postgresql://...``), as
    :func:`parse` reports it: the rest may be the password.
    """
    if isinstance(url, str):
        try:
            parsed = make_url(url)
        except (ArgumentError, ValueError):
            scheme = scheme_of(url)
            return "(a database URL that cannot be parsed)" if scheme is None else f"{scheme}://..."
    else:
        parsed = url
    query = {
        key: ((_PLACEHOLDER,) * len(value) if isinstance(value, tuple) else _PLACEHOLDER) if secret_key(key) else value
        for key, value in parsed.query.items()
    }
    return parsed.set(query=query).render_as_string(hide_password=True).replace(_PLACEHOLDER, MASK)
