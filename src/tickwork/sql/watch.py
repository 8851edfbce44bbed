"""The change-watch thread of a SQL store (``Store.listen``): one daemon thread per store that
calls ``wake`` when another process changed schedules, started once and stopped on close.

A store plugin supplies only the loop body: how its database announces or reveals a change
(PostgreSQL: LISTEN/NOTIFY; SQLite: the file's ``data_version``; MySQL: polling).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("tickwork.watch")

#: ``loop(wake, stop)``: watch until ``stop`` is set, calling ``wake`` on every change seen.
WatchLoop = Callable[[Callable[[], None], threading.Event], None]


class ChangeWatcher:
    """Runs one store's watch loop in a daemon thread.

    :param name: the thread's name (shows in thread dumps)
    :param join_timeout: seconds :meth:`stop` waits for the loop to notice the stop
    """

    def __init__(self, name: str, join_timeout: float = 3.0) -> None:
        self.name = name
        self.join_timeout = join_timeout
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, loop: WatchLoop, wake: Callable[[], None]) -> None:
        """Start watching (a second call while running does nothing)."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(loop, wake), name=self.name, daemon=True)
        self._thread.start()

    def _run(self, loop: WatchLoop, wake: Callable[[], None]) -> None:
        try:
            loop(wake, self._stop)
        except Exception:
            # Nodes still poll on their own schedule; a dead watcher only costs promptness.
            log.exception("%s: change watch stopped", self.name)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.join_timeout)
            self._thread = None


#: :func:`poll_loop`'s ``initial`` when the caller read no marker before the loop starts.
UNREAD = object()


def poll_loop(
    read_marker: Callable[[], object],
    interval: float,
    initial: object = UNREAD,
    worth_waking: Callable[[object, object], bool] | None = None,
) -> WatchLoop:
    """A watch loop that reads ``read_marker()`` every ``interval`` seconds and wakes when the
    value differs from the last one (a failed read is logged and retried at the next interval).

    :param initial: the marker as read by the caller before starting the loop, so that a change
        made once ``listen`` returned is seen even if the loop's thread first runs after it (a
        loaded machine: the thread's first read came after the change, which then looked like
        the starting point)
    :param worth_waking: ``(last, current)``, for a marker that changed: whether the change is
        one to wake for (default: every change)
    """

    def loop(wake: Callable[[], None], stop: threading.Event) -> None:
        last: object = None if initial is UNREAD else initial
        first = initial is UNREAD
        while not stop.wait(0 if first else interval):
            try:
                current = read_marker()
            except Exception as exc:
                log.warning("change poll failed: %s", exc)
                first = False
                continue
            if not first and current != last and (worth_waking is None or worth_waking(last, current)):
                wake()
            last, first = current, False

    return loop
