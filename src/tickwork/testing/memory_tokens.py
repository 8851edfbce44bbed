"""The API tokens of a :class:`~tickwork.testing.MemoryStore`: a dict by name under the store's lock."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import datetime

from ..errors import TokenExistsError, TokenNotFoundError
from ..structures import ApiToken, Role


class MemoryTokens:
    """:meth:`~tickwork.abc.Store.add_token` and the other token methods, in memory."""

    _lock: threading.RLock
    _tokens: dict[str, ApiToken]
    now: Callable[[], datetime]

    def _init_tokens(self) -> None:
        self._tokens = {}

    def add_token(
        self, name: str, role: Role, namespaces: Sequence[str], digest: str, *, by: str | None = None
    ) -> ApiToken:
        with self._lock:
            if name in self._tokens or any(t.digest == digest for t in self._tokens.values()):
                raise TokenExistsError(name)
            token = ApiToken(name, Role(role), tuple(namespaces), self.now(), by, digest)
            self._tokens[name] = token
            return token

    def remove_token(self, name: str) -> ApiToken:
        with self._lock:
            token = self._tokens.pop(name, None)
        if token is None:
            raise TokenNotFoundError(name)
        return token

    def list_tokens(self) -> list[ApiToken]:
        with self._lock:
            return sorted(self._tokens.values(), key=lambda t: t.name)

    def find_token(self, *, digest: str | None = None, name: str | None = None) -> ApiToken | None:
        if (digest is None) == (name is None):
            raise ValueError("find_token: give a digest or a name")
        with self._lock:
            if name is not None:
                return self._tokens.get(name)
            return next((t for t in self._tokens.values() if t.digest == digest), None)
