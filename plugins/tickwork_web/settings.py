"""The dashboard's settings: the ``[web]`` table plus the token from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass

from tickwork.config import Config
from tickwork.errors import ConfigError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
#: Where the token is read from when ``[web] token_env`` does not name another variable.
TOKEN_ENV = "TICKWORK_WEB_TOKEN"


@dataclass(frozen=True)
class WebSettings:
    """:param token: the bearer token that enables actions; ``None``: read-only dashboard"""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None
    token_source: str = TOKEN_ENV

    @classmethod
    def from_config(cls, config: Config, *, token: str | None = None) -> WebSettings:
        """``[web] host/port``; the token from ``token`` if given, else the variable that
        ``[web] token_env`` names (which must then be set), else ``$TICKWORK_WEB_TOKEN``."""
        web = config.web
        port = int(web.get("port", DEFAULT_PORT))
        if not 0 <= port <= 65535:
            raise ConfigError(f"{config.where('web.port')}: must be from 0 to 65535, got {port}")
        source = "the token argument"
        if token is None:
            named = web.get("token_env")
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
        return cls(host=str(web.get("host", DEFAULT_HOST)), port=port, token=token, token_source=source)
