"""The dashboard's settings: the ``[web]`` table (declared by the web plugin through
``tickwork_add_config``) plus the token from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass

from tickwork.config import Config, Flag, OptionalText, Port, Section, Text
from tickwork.errors import ConfigError

#: Where the token is read from when ``[web] token_env`` does not name another variable.
TOKEN_ENV = "TICKWORK_WEB_TOKEN"


class WebConfig(Section, table="web"):
    """``[web]``: the web dashboard's settings (``tickwork web``, docs/web.md); all optional."""

    host = Text("127.0.0.1", help="Address `tickwork web` listens on (`--host` wins).")
    port = Port(8000, help="Port `tickwork web` listens on (`--port` wins; 0: any free one).")
    token_env = OptionalText(
        help="Name of the environment variable holding the token that enables actions.",
        details="When set, that variable must be set and not empty. Without it the token is read from "
        f"`${TOKEN_ENV}`; with no token at all (and no `tickwork tokens` in the database) the dashboard is "
        "read-only. The configured token is an admin of every namespace.",
    )
    public_reads = Flag(
        True,
        help="Whether the pages and `GET /api/...` answer without a token.",
        details="false: every read needs a token (a `viewer` at least), so a token scoped to namespaces "
        "sees only theirs; true: anyone who can reach the dashboard reads every schedule "
        "(docs/web.md#roles-and-tokens).",
    )


DEFAULT_HOST = WebConfig.host.default
DEFAULT_PORT = WebConfig.port.default


@dataclass(frozen=True)
class WebSettings:
    """:param token: the bearer token that enables actions; ``None``: read-only dashboard"""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None
    token_source: str = TOKEN_ENV
    public_reads: bool = True

    @classmethod
    def from_config(cls, config: Config, *, token: str | None = None) -> WebSettings:
        """``[web] host/port``; the token from ``token`` if given, else the variable that
        ``[web] token_env`` names (which must then be set), else ``$TICKWORK_WEB_TOKEN``."""
        web = config.table(WebConfig)
        source = "the token argument"
        if token is None:
            named = web.token_env
            if named is not None:
                source = f"${named}"
                token = os.environ.get(named)
                if not token or not token.strip():
                    raise ConfigError(
                        f"{config.where('web.token_env')}: the environment variable {named} is not set or empty; "
                        "set it, or remove token_env for a read-only dashboard"
                    )
            else:
                source = f"${TOKEN_ENV}"
                token = os.environ.get(TOKEN_ENV) or None
        if token is not None and not token.strip():
            raise ConfigError(f"{source}: the web token must not be blank")
        return cls(host=web.host, port=web.port, token=token, token_source=source, public_reads=web.public_reads)
