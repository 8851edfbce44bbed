"""Keeping secrets out of outcomes and logs: URL scrubbing and a secret-value redactor."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from urllib.parse import unquote, urlsplit

REDACTED = "[redacted]"

# Header names whose values are credentials by convention; their values are scrubbed from any text we emit.
_SENSITIVE_HEADER = re.compile(r"auth|cookie|token|secret|key|password|passwd|signature|session|credential", re.I)
# A secret shorter than this would turn ordinary words into "[redacted]" noise; such values are not scrubbed.
_MIN_SECRET_LENGTH = 4


def safe_url(url: str) -> str:
    """``url`` without user info, query or fragment: what may appear in an error or a log line."""
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
    except ValueError:
        return "<malformed URL>"
    if not parts.scheme or not host:
        # Not a URL we can take apart; drop everything after the first character that may start a secret.
        return re.split(r"[@?#\s]", url, maxsplit=1)[0][:200] or "<malformed URL>"
    return f"{parts.scheme}://{host}{parts.path}"


def sensitive_values(headers: Mapping[str, str]) -> list[str]:
    """The values of ``headers`` that look like credentials (``Authorization``, ``X-Api-Key``, ...)."""
    return [value for name, value in headers.items() if _SENSITIVE_HEADER.search(name)]


class Redactor:
    """Replaces known secret values in text with ``[redacted]``.

    :param secrets: values never to emit (the signing secret, credential header values)
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        self._secrets = sorted({s for s in secrets if len(s) >= _MIN_SECRET_LENGTH}, key=len, reverse=True)

    def __call__(self, text: str, url: str | None = None) -> str:
        """Return ``text`` with every known secret, and the password of ``url`` if any, replaced."""
        secrets = list(self._secrets)
        if url is not None:
            secrets.extend(_url_credentials(url))
        for secret in secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text


def _url_credentials(url: str) -> list[str]:
    """The password in ``url`` as written, decoded, and inside the Basic auth header sent for it."""
    try:
        userinfo = urlsplit(url).netloc.rpartition("@")[0]
    except ValueError:
        return []
    user, _, password = userinfo.partition(":")
    if not password:
        return []
    basic = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    return [p for p in {password, unquote(password), basic} if len(p) >= _MIN_SECRET_LENGTH]
