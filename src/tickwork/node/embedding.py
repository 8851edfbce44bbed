"""``async with node``: a node started and stopped from an event loop, in threads (the start
and the stop block), with a cancelled start undone rather than left running."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, Self

log = logging.getLogger("tickwork.node")


class AsyncEmbedding:
    """Mixed into :class:`~tickwork.node.Node`, which provides :meth:`start` and :meth:`stop`."""

    node_id: str
    #: Set when the caller of a start gave up on it (see :class:`.registration.Registration`).
    _abandoned: threading.Event

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self, timeout: float | None = None) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        starting = asyncio.ensure_future(asyncio.to_thread(self.start))
        try:
            return await asyncio.shield(starting)
        except asyncio.CancelledError:
            # A cancellation cannot interrupt the start's thread: it would finish unseen and leave
            # a running node holding its id (a retry then fails with NodeIdInUseError). Wait for
            # it (it stops at its next step) and stop what it started before letting the
            # cancellation through.
            self._abandoned.set()
            await _to_the_end(self._undo_start(starting))
            raise

    async def _undo_start(self, starting: asyncio.Future[Self]) -> None:
        try:
            await starting
        except Exception:
            # It failed (or stopped when told it was abandoned) and cleaned up after itself; the
            # node was never opened and may be started again (stop() would spoil its engine).
            self._abandoned.clear()
            return
        self._abandoned.clear()
        try:
            await asyncio.to_thread(self.stop)
        except Exception:  # the cancellation goes on, not this
            log.exception("node %s: stopping after a cancelled start failed", self.node_id)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)


async def _to_the_end(work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` to its end even if this task is cancelled again meanwhile (the caller re-raises
    the first cancellation once it is done; ``work`` is bounded by the start and the stop)."""
    task = asyncio.ensure_future(work)
    while not task.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
    task.result()
