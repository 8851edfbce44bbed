"""The API-token role of a :class:`~tickwork.abc.Store` (docs/web.md#roles-and-tokens): tokens kept
by name with their role, their namespaces and the digest of their secret, never the secret.

Not abstract, so a third-party store written before it keeps working: its defaults say the store
keeps no tokens (``tickwork tokens`` then says so, and the dashboard knows only its configured
token). The SQL store keeps them in ``tickwork_api_tokens``; the memory store in memory.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..structures import ApiToken, Role


class TokenStore:
    """The token role of a store (a mixin of :class:`~tickwork.abc.Store`)."""

    def add_token(
        self, name: str, role: Role, namespaces: Sequence[str], digest: str, *, by: str | None = None
    ) -> ApiToken:
        """Store a new token (its ``created_at`` by the database clock).

        :raises tickwork.errors.TokenExistsError: if a token has that name
        :raises NotImplementedError: a store that keeps no tokens (the default)
        """
        raise NotImplementedError(f"{type(self).__name__} keeps no API tokens")

    def remove_token(self, name: str) -> ApiToken:
        """Delete the token ``name``; returns it as it was.

        :raises tickwork.errors.TokenNotFoundError: if no token has that name
        """
        raise NotImplementedError(f"{type(self).__name__} keeps no API tokens")

    def list_tokens(self) -> list[ApiToken]:
        """Every token, by name. Default: none."""
        return []

    def find_token(self, *, digest: str | None = None, name: str | None = None) -> ApiToken | None:
        """The token with this digest (a bearer token checked) or this name (a session's token
        looked up again: a revoked token ends its sessions), ``None`` if there is none.
        Default: none."""
        return None
