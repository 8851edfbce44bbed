"""Who may act: the bearer token for the API, a signed session cookie for the browser, and the
CSRF token of the browser's forms.

Nothing is stored on the server. A session cookie is ``issued.nonce.name.token.signature``, signed
with HMAC-SHA256 keyed by the configured token itself (``token`` empty), or, for a session of an
API token (``token`` its name), by that token's stored digest: changing the configured token or
revoking the API token ends its sessions, and a cookie is worth nothing without the key. A form's
CSRF token is an HMAC of the session's nonce under the same key: a page of another site can
neither read it nor (SameSite=Strict) send the cookie along.

Everything a client sends is compared as UTF-8 bytes in constant time: ``hmac.compare_digest``
refuses a ``str`` that is not ASCII with a ``TypeError``, which was a 500 with a traceback for a
cookie or form field of one accented letter.

Guessing the token is slowed by :class:`Throttle`: after :data:`FREE_FAILURES` wrong tokens from
one address, that address must wait, twice as long after each further failure.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import math
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from tickwork.structures import ApiToken

from .limits import capped

COOKIE = "tickwork_session"
#: How long a browser stays logged in.
SESSION_SECONDS = 12 * 3600
MAX_NAME = 40
#: Wrong tokens one address may send before it has to wait.
FREE_FAILURES = 5
#: The first wait, in seconds; doubled after each further failure, up to :data:`MAX_WAIT`.
FIRST_WAIT = 1.0
MAX_WAIT = 900.0
#: Addresses remembered at most (the oldest are forgotten first), and for how long after their
#: last failure: the memory an attacker with many addresses can make the dashboard use is bounded.
MAX_ADDRESSES = 10_000
FORGET_AFTER = 24 * 3600.0

log = logging.getLogger("tickwork.web.actions")


def same(given: str, expected: str) -> bool:
    """Constant-time comparison of any two strings (as UTF-8; a lone surrogate is replaced)."""
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8", "replace"))


def clean_name(text: str) -> str:
    """A user-given name as the action log shows it: one line, whitespace collapsed, at most
    :data:`MAX_NAME` characters (it must not be able to forge log lines)."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())[:MAX_NAME]


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unb64(text: str) -> str:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()


@dataclass(frozen=True)
class Session:
    """A logged-in browser. ``name`` is what the operator typed at login (may be empty);
    ``token`` the API token it logged in with (empty: the configured token)."""

    nonce: str
    name: str
    issued: int
    token: str = ""

    @property
    def who(self) -> str:
        """The session as the action log and the versions' author show it (the token's name
        included: every action is recorded with the token that allowed it)."""
        short = self.nonce[:8]
        if self.token:
            return (
                f"{self.name} (token {self.token}, session {short})"
                if self.name
                else f"token {self.token} (session {short})"
            )
        return f"{self.name} (session {short})" if self.name else f"session {short}"


class Guard:
    """Checks the configured token (or none), and signs and checks session cookies and CSRF
    tokens. A session of an API token is keyed by that token's digest, which the caller looks up
    (:meth:`session` takes the lookup: the store is read in a worker thread)."""

    def __init__(self, token: str | None) -> None:
        self.token = token

    @property
    def enabled(self) -> bool:
        """Whether a token is configured (API tokens of the store may enable actions too)."""
        return self.token is not None

    @staticmethod
    def _key(digest: str | None, configured: str | None) -> bytes:
        return (configured or "").encode() if digest is None else ("api-token|" + digest).encode()

    def _sign(self, message: str, digest: str | None = None) -> str:
        return hmac.new(self._key(digest, self.token), message.encode(), hashlib.sha256).hexdigest()

    def token_matches(self, given: str) -> bool:
        return self.token is not None and same(given, self.token)

    def new_session(self, name: str, token: ApiToken | None = None) -> tuple[Session, str]:
        """A session (of the configured token, or of the API token ``token``) and its cookie."""
        assert token is not None or self.token is not None
        session = Session(secrets.token_hex(16), clean_name(name), int(time.time()), token.name if token else "")
        body = f"{session.issued}.{session.nonce}.{_b64(session.name)}.{_b64(session.token)}"
        return session, f"{body}.{self._sign('session|' + body, token.digest if token else None)}"

    def session(
        self, cookie: str | None, lookup: Callable[[str], ApiToken | None]
    ) -> tuple[Session, ApiToken | None] | None:
        """The session a cookie proves and its API token (``None``: the configured one), or
        ``None`` (absent, forged, expired, its token revoked or no longer configured).
        ``lookup`` finds an API token by name (it blocks: call this in a worker thread)."""
        if not cookie:
            return None
        parts = cookie.split(".")
        if len(parts) != 5:
            return None
        issued, nonce, name, token_name, signature = parts
        try:
            issued_at = int(issued)
            decoded, named = _unb64(name), _unb64(token_name)
        except (ValueError, binascii.Error):  # UnicodeDecodeError is a ValueError
            return None
        if not 0 <= time.time() - issued_at <= SESSION_SECONDS:
            return None
        token = lookup(named) if named else None
        if token is None if named else self.token is None:
            return None
        body = f"{issued}.{nonce}.{name}.{token_name}"
        if not same(signature, self._sign("session|" + body, token.digest if token else None)):
            return None
        return Session(nonce, decoded, issued_at, named), token

    def csrf_token(self, session: Session, token: ApiToken | None) -> str:
        return self._sign("csrf|" + session.nonce, token.digest if token else None)

    def csrf_matches(self, session: Session, token: ApiToken | None, given: str | None) -> bool:
        return bool(given) and same(str(given), self.csrf_token(session, token))


@dataclass
class _Failures:
    count: int = 0
    until: float = 0.0  # refused until this clock reading
    refused: int = 0  # attempts refused since the last logged failure
    last: float = 0.0


class Throttle:
    """Failed token checks per client address: after :data:`FREE_FAILURES`, the address is refused
    (without comparing anything) for :data:`FIRST_WAIT` seconds, doubled after each further failure
    up to :data:`MAX_WAIT`; a success forgets it. Each counted failure logs one WARNING (so at most
    one per back-off step), the refused attempts are only counted in the next one.

    :param clock: monotonic seconds (tests inject one)
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, _Failures] = OrderedDict()

    def wait(self, address: str) -> int:
        """Whole seconds ``address`` must still wait before its token is checked (0: go ahead)."""
        with self._lock:
            record = self._seen.get(address)
            if record is None:
                return 0
            left = record.until - self.clock()
            if left <= 0:
                return 0
            record.refused += 1
            return max(1, math.ceil(left))

    def failed(self, address: str, what: str) -> None:
        """Count a wrong token from ``address`` and log it (``what``: ``login``, ``bearer token``)."""
        with self._lock:
            now = self.clock()
            self._forget_old(now)
            record = self._seen.pop(address, None) or _Failures()
            self._seen[address] = record  # most recent last
            record.count += 1
            record.last = now
            # The address may come from a proxy's X-Forwarded-For: capped like any logged input.
            message = f"{what} refused from {capped(address)}: wrong token ({record.count} failure(s) in a row"
            if record.refused:
                message += f"; {record.refused} attempts refused during the back-off"
            record.refused = 0
            message += ")"
            if record.count >= FREE_FAILURES:
                wait = min(MAX_WAIT, FIRST_WAIT * 2 ** min(record.count - FREE_FAILURES, 32))
                record.until = now + wait
                message += f"; further attempts refused for {wait:g} s"
        log.warning("%s", message)

    def succeeded(self, address: str) -> None:
        with self._lock:
            self._seen.pop(address, None)

    def _forget_old(self, now: float) -> None:
        while self._seen:
            address, oldest = next(iter(self._seen.items()))
            if len(self._seen) < MAX_ADDRESSES and now - oldest.last < FORGET_AFTER:
                break
            del self._seen[address]
