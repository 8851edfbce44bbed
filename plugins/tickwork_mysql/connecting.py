"""PyMySQL connections that share one TLS context.

Given no TLS options, PyMySQL (2.x) offers TLS to a server that supports it, unverified, and builds
a new ``ssl.SSLContext`` for every connection to do so, loading the system's CA certificates each
time: 30-70 ms of CPU per connection on an idle machine (PyMySQL 2.2.8; the rest of a connection
takes about 1 ms), more on a loaded one, on a node's start-up path and in every CLI command. That
context is the same for every connection (it verifies nothing: no certificates are used), so one is
built and shared. Connections given TLS options get theirs as PyMySQL builds them.
"""

from __future__ import annotations

import functools
import ssl
import threading
from typing import Any


@functools.cache
def connection_class() -> Any:
    """PyMySQL's connection class, sharing the context of its TLS-if-offered default; PyMySQL's
    own where it has no such default to share (``_create_ssl_ctx`` missing)."""
    import pymysql.connections

    base: Any = pymysql.connections.Connection
    if not callable(getattr(base, "_create_ssl_ctx", None)):
        return base
    shared: list[ssl.SSLContext] = []
    lock = threading.Lock()

    class SharedTLSConnection(base):  # type: ignore[misc]
        def _create_ssl_ctx(self, sslp: Any) -> Any:
            if sslp:  # TLS options given (or a context): PyMySQL's own
                return super()._create_ssl_ctx(sslp)
            with lock:
                if not shared:
                    shared.append(super()._create_ssl_ctx(sslp))
                return shared[0]

    return SharedTLSConnection
