"""The admin API's API tokens (:class:`Tokens`, a part of :class:`tickwork.Admin`): creating,
revoking and listing them (``tickwork tokens``), and finding the token a secret is
(the dashboard). Roles and namespaces: :mod:`tickwork.admin.roles`."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..abc import Store
from ..structures import ApiToken, Role
from .roles import (
    checked_name,
    checked_namespaces,
    checked_role,
    digest_matches,
    digest_of,
    new_secret,
)


class Tokens:
    """The token part of :class:`tickwork.Admin` (which provides the store)."""

    if TYPE_CHECKING:

        def store(self, *, write: bool = False) -> Store: ...

    def create_token(
        self, name: str, role: str | Role, namespaces: Iterable[str] = (), *, by: str | None = None
    ) -> tuple[ApiToken, str]:
        """Create the token ``name``: the stored token and its secret, which is not kept anywhere
        (only its digest is) and so can be shown this once.

        :raises tickwork.ConfigError: a name, role or namespace that is not valid
        :raises tickwork.errors.TokenExistsError: if the name is taken
        """
        name, chosen, scope = checked_name(name), checked_role(role), checked_namespaces(namespaces)
        secret = new_secret()
        token = self.store(write=True).add_token(name, chosen, scope, digest_of(secret), by=by)
        return token, secret

    def revoke_token(self, name: str) -> ApiToken:
        """Delete the token ``name``: its bearer requests and dashboard sessions stop working at
        once (each request looks its token up again).

        :raises tickwork.errors.TokenNotFoundError: if no token has that name
        """
        return self.store(write=True).remove_token(name)

    def tokens(self) -> builtins.list[ApiToken]:
        """Every token, by name (never a secret: the store has none)."""
        return self.store().list_tokens()

    def token_for(self, secret: str) -> ApiToken | None:
        """The token whose secret is ``secret``, or ``None``."""
        found = self.store().find_token(digest=digest_of(secret))
        return found if found is not None and digest_matches(secret, found) else None

    def token_named(self, name: str) -> ApiToken | None:
        """The token ``name`` (a dashboard session's, looked up on every request), or ``None``."""
        return self.store().find_token(name=name)
