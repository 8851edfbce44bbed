"""Who may act: the bearer token for the API, a signed session cookie for the browser, and the
CSRF token of the browser's forms.

Nothing is stored on the server. A session cookie is ``issued.nonce.name.signature``, signed with
HMAC-SHA256 keyed by the token itself, so changing the token ends every session and a cookie is
worth nothing without the token. A form's CSRF token is an HMAC of the session's nonce: a page of
another site can neither read it nor (SameSite=Strict) send the cookie along.

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
    """A logged-in browser. ``name`` is what the operator typed at login (may be empty)."""

    nonce: str
    name: str
    issued: int

    @property
    def who(self) -> str:
        short = self.nonce[:8]
        return f"{self.name} (session {short})" if self.name else f"session {short}"


class Guard:
    """Checks bearer tokens, session cookies and CSRF tokens against one token (or none)."""

    def __init__(self, token: str | None) -> None:
        self.token = token

    @property
    def enabled(self) -> bool:
        """Whether actions are possible at all (a token is configured)."""
        return self.token is not None

    def _sign(self, message: str) -> str:
        assert self.token is not None
        return hmac.new(self.token.encode(), message.encode(), hashlib.sha256).hexdigest()

    def token_matches(self, given: str) -> bool:
        return self.token is not None and same(given, self.token)

    def new_session(self, name: str) -> tuple[Session, str]:
        """A session and its cookie value."""
        session = Session(secrets.token_hex(16), clean_name(name), int(time.time()))
        body = f"{session.issued}.{session.nonce}.{_b64(session.name)}"
        return session, f"{body}.{self._sign('session|' + body)}"

    def session(self, cookie: str | None) -> Session | None:
        """The session a cookie proves, or ``None`` (absent, forged, expired, or no token)."""
        if not cookie or self.token is None:
            return None
        parts = cookie.split(".")
        if len(parts) != 4:
            return None
        issued, nonce, name, signature = parts
        body = f"{issued}.{nonce}.{name}"
        if not same(signature, self._sign("session|" + body)):
            return None
        try:
            issued_at = int(issued)
            decoded = _unb64(name)
        except (ValueError, binascii.Error):  # UnicodeDecodeError is a ValueError
            return None
        if not 0 <= time.time() - issued_at <= SESSION_SECONDS:
            return None
        return Session(nonce, decoded, issued_at)

    def csrf_token(self, session: Session) -> str:
        return self._sign("csrf|" + session.nonce)

    def csrf_matches(self, session: Session, given: str | None) -> bool:
        return bool(given) and same(str(given), self.csrf_token(session))


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
