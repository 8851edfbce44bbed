"""Pruning the run history in bounded batches on a thread of its own (River's ``JobCleaner``,
Oban's pruner): a history of millions of rows is deleted a batch per short transaction, never in
one statement on the loop's thread, where it would delay claims for as long as it ran."""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from ..abc import Store
from ..abc.storeroles import PRUNE_BATCH
from ..errors import TickworkError

log = logging.getLogger("tickwork.engine")


class HistoryPruner:
    """Deletes finished runs older than ``retention``, ``batch`` rows per store call.

    :meth:`start` begins a pass in the background unless one is still going; :meth:`stop` ends
    it after the batch in progress (the node stops it before it closes the store).
    """

    def __init__(self, store: Store, retention: timedelta, *, batch: int = PRUNE_BATCH) -> None:
        self.store = store
        self.retention = retention
        self.batch = batch
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Begin a pass on the pruning thread; nothing if one is running or the pruner stopped."""
        with self._lock:
            if self._stop.is_set() or (self._thread is not None and self._thread.is_alive()):
                return
            self._thread = threading.Thread(target=self._pass, name="tickwork-prune", daemon=True)
            self._thread.start()

    def prune(self) -> int:
        """One pass on the calling thread: batches until one deletes fewer than ``batch`` rows
        or the pruner is stopped. :return: the rows deleted"""
        total = 0
        while not self._stop.is_set():
            deleted = self.store.prune_history(self.retention, limit=self.batch)
            total += deleted
            if deleted < self.batch:
                break
        return total

    def stop(self, timeout: float | None = None) -> None:
        """End the pass in progress after its current batch and start no other."""
        with self._lock:
            self._stop.set()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _pass(self) -> None:
        try:
            pruned = self.prune()
        except TickworkError as exc:
            log.warning("pruning history failed: %s", exc)
            return
        except Exception:
            log.exception("pruning history failed")
            return
        if pruned:
            log.info("pruned %d history rows older than %s", pruned, self.retention)
