"""Who may act: the bearer token for the API, a signed session cookie for the browser, and the
CSRF token of the browser's forms.

Nothing is stored on the server. A session cookie is ``issued.nonce.name.signature``, signed with
HMAC-SHA256 keyed by the token itself, so changing the token ends every session and a cookie is
worth nothing without the token. A form's CSRF token is an HMAC of the session's nonce: a page of
another site can neither read it nor (SameSite=Strict) send the cookie along.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

COOKIE = "tickwork_session"
#: How long a browser stays logged in.
SESSION_SECONDS = 12 * 3600
MAX_NAME = 40


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
        return self.token is not None and hmac.compare_digest(given.encode(), self.token.encode())

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
        if not hmac.compare_digest(signature, self._sign("session|" + body)):
            return None
        try:
            issued_at = int(issued)
            decoded = _unb64(name)
        except ValueError:
            return None
        if not 0 <= time.time() - issued_at <= SESSION_SECONDS:
            return None
        return Session(nonce, decoded, issued_at)

    def csrf_token(self, session: Session) -> str:
        return self._sign("csrf|" + session.nonce)

    def csrf_matches(self, session: Session, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(str(given), self.csrf_token(session))
