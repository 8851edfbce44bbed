"""Admin objects for request threads. An :class:`~tickwork.admin.Admin` is not thread-safe, and
opening one per request would connect per request, so idle ones are kept and handed out one per
request at a time; there are never more than the server's concurrent requests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tickwork.admin import Admin
from tickwork.config import Config
from tickwork.plugin.manager import plugin_manager_for
from tickwork.structures import ALL_NAMESPACES


class AdminPool:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.manager = plugin_manager_for(config)
        self._idle: list[Admin] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def admin(self, namespace: str = ALL_NAMESPACES) -> Iterator[Admin]:
        """An idle admin (or a new one) acting in ``namespace`` (docs/teams.md) for the request."""
        with self._lock:
            admin = self._idle.pop() if self._idle else None
        if admin is None:
            admin = Admin(self.config, manager=self.manager)
        try:
            admin.use_namespace(namespace)
            yield admin
        finally:
            with self._lock:
                keep = not self._closed
                if keep:
                    self._idle.append(admin)
            if not keep:
                admin.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for admin in idle:
            admin.close()
