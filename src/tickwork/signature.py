"""HMAC signatures for HTTP calls, shared by the ``http`` executor and Python receivers.

A signed request carries two headers::

    X-Tickwork-Timestamp: 1717171717
    X-Tickwork-Signature: v1=<hex HMAC-SHA256 of b"1717171717." + body>

The timestamp is Unix seconds at sending time. Signing it together with the body means a captured
request cannot be replayed once the timestamp falls outside the receiver's tolerance; inside that
window a receiver dedupes by the ``Idempotency-Key`` header (the run id).

Usage on the receiving side::

    from tickwork.signature import SignatureError, verify

    try:
        verify(os.environ["TICKWORK_SECRET"], raw_body, request_headers)
    except SignatureError:
        ...  # answer 401
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Mapping, Sequence
from email.message import Message

from .errors import TickworkError

TIMESTAMP_HEADER = "X-Tickwork-Timestamp"
SIGNATURE_HEADER = "X-Tickwork-Signature"
#: The version tag of the signing scheme; a future scheme gets a new tag so both can coexist.
SCHEME = "v1"
DEFAULT_TOLERANCE = 300
_HEX = re.compile(r"[0-9a-f]{64}")

Secret = str | bytes
#: Request headers as frameworks hand them over: a mapping, or the ``email.message.Message`` that
#: ``http.server`` uses.
Headers = Mapping[str, str] | Message


class SignatureError(TickworkError):
    """A request's signature is missing, malformed, wrong, or its timestamp is outside the tolerance."""


def _key(secret: Secret) -> bytes:
    key = secret.encode("utf-8") if isinstance(secret, str) else secret
    if not key:
        raise ValueError("secret: must not be empty")
    return key


def compute(secret: Secret, body: bytes, timestamp: int) -> str:
    """Return the hex HMAC-SHA256 of ``f"{timestamp}."`` followed by ``body``."""
    message = f"{timestamp}.".encode("ascii") + body
    return hmac.new(_key(secret), message, hashlib.sha256).hexdigest()


def sign(secret: Secret, body: bytes, timestamp: int | None = None) -> dict[str, str]:
    """Return the headers that sign ``body``.

    :param secret: the shared secret (``str`` is encoded as UTF-8)
    :param body: the exact bytes that will be sent
    :param timestamp: Unix seconds to sign with; defaults to now
    :return: ``{"X-Tickwork-Timestamp": ..., "X-Tickwork-Signature": "v1=<hex>"}``
    """
    ts = int(time.time()) if timestamp is None else int(timestamp)
    return {TIMESTAMP_HEADER: str(ts), SIGNATURE_HEADER: f"{SCHEME}={compute(secret, body, ts)}"}


def _header(headers: Headers, name: str) -> str | None:
    # Frameworks hand over case-insensitive mappings, plain dicts are not; scan rather than trust.
    value = headers.get(name)
    if value is not None:
        return str(value)
    lowered = name.lower()
    for key, candidate in headers.items():
        if key.lower() == lowered:
            return str(candidate)
    return None


def _signatures(header_value: str) -> list[str]:
    """The hex digests tagged with our scheme in a signature header (``v1=a, v1=b`` allowed)."""
    found = []
    for part in header_value.split(","):
        tag, sep, digest = part.strip().partition("=")
        digest = digest.strip().lower()
        # Only hex is kept: compare_digest refuses non-ASCII str, and anything else cannot match anyway.
        if sep and tag == SCHEME and _HEX.fullmatch(digest):
            found.append(digest)
    return found


def verify(
    secret: Secret | Sequence[Secret],
    body: bytes,
    headers: Headers | None = None,
    *,
    timestamp: int | str | None = None,
    signature: str | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    now: float | None = None,
) -> None:
    """Check that ``body`` was signed with ``secret`` recently.

    Pass either the request ``headers`` (any case) or ``timestamp`` and ``signature`` (the header values).

    :param secret: the shared secret, or several (e.g. old and new during a rotation); any match passes
    :param body: the raw request body, exactly as received (not re-serialised JSON)
    :param tolerance: how many seconds the timestamp may differ from ``now``, either way
    :param now: the receiver's clock in Unix seconds; defaults to ``time.time()``
    :raises SignatureError: if the signature is missing, malformed or wrong, or the timestamp is
        outside the tolerance
    """
    if headers is not None:
        if timestamp is not None or signature is not None:
            raise TypeError("verify: pass either headers or timestamp and signature, not both")
        timestamp = _header(headers, TIMESTAMP_HEADER)
        signature = _header(headers, SIGNATURE_HEADER)
    if timestamp is None or (isinstance(timestamp, str) and not timestamp.strip()):
        raise SignatureError(f"missing {TIMESTAMP_HEADER} header")
    if not signature:
        raise SignatureError(f"missing {SIGNATURE_HEADER} header")
    try:
        ts = int(timestamp)
    except ValueError:
        raise SignatureError(f"{TIMESTAMP_HEADER} is not an integer: {str(timestamp)[:40]!r}") from None
    current = time.time() if now is None else now
    if abs(current - ts) > tolerance:
        raise SignatureError(
            f"{TIMESTAMP_HEADER} {ts} is {current - ts:+.0f} s from now, outside the tolerance of {tolerance:g} s"
        )
    digests = _signatures(signature)
    if not digests:
        raise SignatureError(f"{SIGNATURE_HEADER} holds no {SCHEME}=<hex> signature")
    secrets = [secret] if isinstance(secret, str | bytes) else list(secret)
    if not secrets:
        raise ValueError("secret: at least one secret is required")
    for candidate in secrets:
        expected = compute(candidate, body, ts)
        # Check every digest with compare_digest so timing reveals nothing about the expected value.
        matched = False
        for digest in digests:
            matched |= hmac.compare_digest(expected, digest)
        if matched:
            return
    raise SignatureError(f"{SIGNATURE_HEADER} does not match the body and timestamp")
