"""A fixed set of worker threads running submitted calls.

Lighter than :class:`concurrent.futures.ThreadPoolExecutor` for what the local executor needs: no
Future, condition and done-callback list per call, no idle-thread semaphore on every submit (those
were about a tenth of a node's engine thread in a 10,000-fire burst of no-op jobs).

A task handed over with the engine's start fence (:mod:`tickwork.engine.fence`) asks it as a
worker takes it, not when it was queued: a run that waited for a thread while its node was
declared dead is not started (docs/claim-protocol.md, "A node declared dead").
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from tickwork.abc import BodyFence
from tickwork.structures import StartVerdict

#: Called once per task: with the exception the call raised, or ``None`` on a normal return.
Report = Callable[[BaseException | None], object]

#: Seconds between two looks at a task's fence while it cannot tell (the node's heartbeat is
#: stale: it may have been declared dead without knowing it yet). Only then: a healthy node's
#: tasks ask it once.
FENCE_POLL = 0.05


def _nothing(*_args: object) -> None:
    """What a task calls and reports to once it let go of its own (:meth:`Task.let_go`)."""


class PoolTask(Protocol):
    """What the pool runs: ``call()`` in a worker, then ``report(exc)`` (``None`` on a normal
    return), then ``let_go()``. ``_state`` is ``"queued"`` when put and only changed by the pool,
    under its lock (:meth:`Pool.cancel`). ``fence``, when set, is asked before ``call()``: a task
    it drops is reported with :class:`NotStarted` instead. :class:`Task` is one; the local
    executor's thread runs are others (one object per run instead of two)."""

    _state: str
    fence: BodyFence | None

    def call(self) -> object: ...

    def report(self, exc: BaseException | None) -> object: ...

    def let_go(self) -> None: ...


class Task:
    """A submitted call; :meth:`cancel` stops it from starting."""

    __slots__ = ("_state", "call", "fence", "report")

    def __init__(self, call: Callable[[], Any], report: Report, fence: BodyFence | None = None) -> None:
        self.call = call
        self.report = report
        self.fence = fence
        self._state = "queued"  # -> "running" | "cancelled" | "refused"; changed under Pool._lock

    @property
    def started(self) -> bool:
        return self._state == "running"

    def let_go(self) -> None:
        """Drop the call and the report once they are of no more use. A submitter that keeps its
        task (to cancel it) and hands the pool its own bound methods makes a reference cycle,
        which only the garbage collector frees, with everything the run held: 21 objects per run
        surviving into collections in a burst of no-op runs, 9 % of the engine thread."""
        self.call = _nothing
        self.report = _nothing


class PoolShutDown(Exception):
    """Reported for a task that was still queued when the pool shut down without waiting."""


class NotStarted(Exception):
    """Reported for a task its fence dropped as a worker took it: the node was declared dead
    while it waited (the others recorded its run ``abandoned``)."""


class Pool:
    """``max_workers`` threads named ``{name}_{n}``, started by :meth:`start`."""

    def __init__(self, max_workers: int, name: str) -> None:
        self.max_workers = max_workers
        self.name = name
        self._queue: queue.SimpleQueue[PoolTask | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = True

    def start(self) -> None:
        with self._lock:
            self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"{self.name}_{n}", daemon=True) for n in range(self.max_workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, call: Callable[[], Any], report: Report, fence: BodyFence | None = None) -> Task:
        """Queue ``call``; a worker runs it and then calls ``report`` (from the worker thread).

        :param fence: asked as a worker takes the task (see :class:`PoolTask`)
        :raises RuntimeError: when the pool is not started or already shut down
        """
        task = Task(call, report, fence)
        self.put(task)
        return task

    def put(self, task: PoolTask) -> None:
        """Queue ``task`` (its ``_state`` ``"queued"``); a worker runs it as :meth:`submit`'s.

        :raises RuntimeError: when the pool is not started or already shut down
        """
        if self._closed:
            raise RuntimeError("the worker pool is not running")
        self._queue.put(task)

    def cancel(self, task: PoolTask) -> bool:
        """Stop ``task`` from starting; False when it already started (or finished)."""
        with self._lock:
            if task._state != "queued":
                return task._state == "cancelled"
            task._state = "cancelled"
            return True

    def _work(self) -> None:
        while True:
            task = self._queue.get()
            if task is None:
                return
            refused = None if task.fence is None else self._refusal(task, task.fence)
            with self._lock:
                if task._state != "queued":
                    task.let_go()
                    continue
                task._state = "running" if refused is None else "refused"
            if refused is not None:
                task.report(refused)
                task.let_go()
                continue
            try:
                task.call()
            except BaseException as exc:  # reported, never lost with the thread
                task.report(exc)
            else:
                task.report(None)
            task.let_go()

    def _refusal(self, task: PoolTask, fence: BodyFence) -> BaseException | None:
        """Ask ``task``'s fence, now that a worker has it: ``None`` to start it, or what to
        report instead. While the fence cannot tell, the task stays queued (its soft timeout
        or a cancel can still stop it) and this worker looks again every :data:`FENCE_POLL`."""
        verdict = fence.verdict()
        while verdict is StartVerdict.WAIT:
            if self._closed:
                return PoolShutDown("the pool shut down while the task waited for its node's heartbeat")
            if task._state != "queued":
                return None  # cancelled meanwhile: the caller lets go of it
            time.sleep(FENCE_POLL)
            verdict = fence.verdict()
        return None if verdict is StartVerdict.START else NotStarted()

    def shutdown(self, wait: bool = True) -> None:
        """Stop the workers. ``wait``: let queued tasks run first and join the threads; otherwise
        cancel queued tasks (each is reported with :class:`PoolShutDown`) and do not wait for
        running ones."""
        with self._lock:
            self._closed = True
        if not wait:
            while True:
                try:
                    task = self._queue.get_nowait()
                except queue.Empty:
                    break
                if task is not None and self.cancel(task):
                    task.report(PoolShutDown("the pool shut down before the task started"))
        for _ in self._threads:
            self._queue.put(None)
        if wait:
            for thread in self._threads:
                thread.join()
        self._threads = []
