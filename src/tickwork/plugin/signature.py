"""Standard Webhooks signatures (https://www.standardwebhooks.com), shared by the ``http`` executor
and Python receivers.

A signed request carries three headers::

    webhook-id: tw_3f0c...           the fire's identity: the same for every attempt of one fire
    webhook-timestamp: 1717171717    Unix seconds at sending time
    webhook-signature: v1,<base64 HMAC-SHA256 of b"<id>.<timestamp>." + body>

The key is the base64-decoded part of a ``whsec_<base64>`` secret. Several signatures may be
present, separated by spaces (one per secret while a secret is being rotated). Because the id and
the timestamp are signed together with the body, a receiver can dedupe on ``webhook-id`` and a
captured request is useless once its timestamp falls outside the receiver's tolerance.

Any Standard Webhooks library verifies these requests; Python receivers can also use::

    from tickwork.plugin.signature import SignatureError, verify

    try:
        verify(os.environ["TICKWORK_HTTP_SECRET"], raw_body, request_headers)
    except SignatureError:
        ...  # answer 401
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import time
from collections.abc import Mapping, Sequence
from email.message import Message

from ..errors import TickworkError

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
#: The version tag of the signing scheme (the standard's only one, HMAC-SHA256).
SCHEME = "v1"
SECRET_PREFIX = "whsec_"
DEFAULT_TOLERANCE = 300
#: Key sizes the standard allows for a secret, in bytes.
MIN_KEY_BYTES, MAX_KEY_BYTES = 24, 64
# Unix seconds for the next few thousand years; anything longer is garbage, not a time.
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
# What an id may hold: visible ASCII without the space that separates signatures, bounded.
_ID = re.compile(r"[!-~]{1,256}")
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")

#: One secret: ``whsec_<base64>`` (str) or the raw key (bytes).
Secret = str | bytes
#: Request headers as frameworks hand them over: a mapping, or the ``email.message.Message`` that
#: ``http.server`` uses.
Headers = Mapping[str, str] | Message


class SignatureError(TickworkError):
    """A request's signature is missing, malformed, wrong, or its timestamp is outside the tolerance."""


def keys(secret: Secret | Sequence[Secret]) -> list[bytes]:
    """The HMAC keys of ``secret``: one ``whsec_<base64>`` string, several separated by spaces,
    raw key bytes, or a sequence of any of these.

    :raises ValueError: naming the problem but never quoting the secret
    """
    if isinstance(secret, bytes):
        if not secret:
            raise ValueError("secret: must not be empty")
        return [secret]
    if isinstance(secret, str):
        parts = secret.split()
        if not parts:
            raise ValueError("secret: must not be empty")
        return [_decode(part, position) for position, part in enumerate(parts, 1)]
    found = [key for item in secret for key in keys(item)]
    if not found:
        raise ValueError("secret: at least one secret is required")
    return found


def _decode(part: str, position: int) -> bytes:
    if not part.startswith(SECRET_PREFIX):
        raise ValueError(f"secret {position}: must start with {SECRET_PREFIX!r} followed by base64")
    encoded = part[len(SECRET_PREFIX) :]
    if not _BASE64.fullmatch(encoded):
        raise ValueError(f"secret {position}: the part after {SECRET_PREFIX!r} is not base64")
    try:
        key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except binascii.Error:
        raise ValueError(f"secret {position}: the part after {SECRET_PREFIX!r} is not base64") from None
    if not MIN_KEY_BYTES <= len(key) <= MAX_KEY_BYTES:
        raise ValueError(
            f"secret {position}: decodes to {len(key)} bytes; the standard asks for "
            f"{MIN_KEY_BYTES} to {MAX_KEY_BYTES} (make one with tickwork.signature.new_secret())"
        )
    return key


def new_secret(size: int = 32) -> str:
    """A fresh random ``whsec_<base64>`` secret of ``size`` bytes."""
    import secrets

    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(size)).decode("ascii")


def compute(key: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    """The base64 HMAC-SHA256 of ``"<msg_id>.<timestamp>."`` followed by ``body``, under ``key``."""
    message = f"{msg_id}.{timestamp}.".encode() + body
    return base64.b64encode(hmac.new(key, message, hashlib.sha256).digest()).decode("ascii")


def sign(secret: Secret | Sequence[Secret], msg_id: str, body: bytes, timestamp: int | None = None) -> dict[str, str]:
    """Return the three headers that sign ``body`` as message ``msg_id``.

    :param secret: ``whsec_...`` (several separated by spaces give one signature each), raw key bytes,
        or a sequence of these
    :param msg_id: the ``webhook-id``: visible ASCII, no spaces, at most 256 characters
    :param body: the exact bytes that will be sent
    :param timestamp: Unix seconds to sign with; defaults to now
    :raises ValueError: for a malformed secret or id
    """
    if not _ID.fullmatch(msg_id):
        raise ValueError("msg_id: must be 1 to 256 visible ASCII characters without spaces")
    ts = int(time.time()) if timestamp is None else int(timestamp)
    signatures = " ".join(f"{SCHEME},{compute(key, msg_id, ts, body)}" for key in keys(secret))
    return {ID_HEADER: msg_id, TIMESTAMP_HEADER: str(ts), SIGNATURE_HEADER: signatures}


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


def _signatures(header_value: str) -> list[bytes]:
    """The digests tagged with our scheme in a signature header (``v1,a v1,b`` allowed)."""
    found = []
    for part in header_value.split():
        tag, sep, encoded = part.partition(",")
        if not sep or tag != SCHEME or not _BASE64.fullmatch(encoded):
            continue
        try:
            digest = base64.b64decode(encoded, validate=True)
        except binascii.Error:
            continue
        if len(digest) == hashlib.sha256().digest_size:
            found.append(digest)
    return found


def verify(
    secret: Secret | Sequence[Secret],
    body: bytes,
    headers: Headers | None = None,
    *,
    msg_id: str | None = None,
    timestamp: int | str | None = None,
    signature: str | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    now: float | None = None,
) -> str:
    """Check that ``body`` was signed with ``secret`` recently; return its ``webhook-id``.

    Pass either the request ``headers`` (any case) or ``msg_id``, ``timestamp`` and ``signature``
    (the header values).

    :param secret: ``whsec_...`` (several separated by spaces, e.g. old and new during a rotation),
        raw key bytes, or a sequence of these; any match passes
    :param body: the raw request body, exactly as received (not re-serialised JSON)
    :param tolerance: how many seconds the timestamp may differ from ``now``, either way
    :param now: the receiver's clock in Unix seconds; defaults to ``time.time()``
    :return: the verified ``webhook-id``, the key to dedupe on
    :raises SignatureError: if a header is missing or malformed, the signature is wrong, or the
        timestamp is outside the tolerance
    :raises ValueError: if ``secret`` itself is malformed (a configuration mistake, not a bad request)
    """
    if headers is not None:
        if msg_id is not None or timestamp is not None or signature is not None:
            raise TypeError("verify: pass either headers or msg_id, timestamp and signature, not both")
        msg_id = _header(headers, ID_HEADER)
        timestamp = _header(headers, TIMESTAMP_HEADER)
        signature = _header(headers, SIGNATURE_HEADER)
    candidates = keys(secret)
    if not msg_id:
        raise SignatureError(f"missing {ID_HEADER} header")
    if timestamp is None or (isinstance(timestamp, str) and not timestamp.strip()):
        raise SignatureError(f"missing {TIMESTAMP_HEADER} header")
    if not signature:
        raise SignatureError(f"missing {SIGNATURE_HEADER} header")
    if not _ID.fullmatch(msg_id):
        raise SignatureError(f"{ID_HEADER} must be 1 to 256 visible ASCII characters without spaces")
    text = str(timestamp).strip()
    if not _TIMESTAMP.fullmatch(text):
        # Never echo it whole: it is attacker-controlled and may be huge.
        raise SignatureError(f"{TIMESTAMP_HEADER} is not Unix seconds (1 to 12 digits): {text[:20]!r}")
    ts = int(text)
    current = time.time() if now is None else now
    if abs(current - ts) > tolerance:
        raise SignatureError(
            f"{TIMESTAMP_HEADER} {ts} is {current - ts:+.0f} s from now, outside the tolerance of {tolerance:g} s"
        )
    digests = _signatures(signature)
    if not digests:
        raise SignatureError(f"{SIGNATURE_HEADER} holds no {SCHEME},<base64 SHA-256> signature")
    message = f"{msg_id}.{ts}.".encode() + body
    matched = False
    for key in candidates:
        expected = hmac.new(key, message, hashlib.sha256).digest()
        # Every comparison runs, so timing reveals neither which key nor which digest matched.
        for digest in digests:
            matched |= hmac.compare_digest(expected, digest)
    if not matched:
        raise SignatureError(f"{SIGNATURE_HEADER} does not match the id, timestamp and body")
    return msg_id
