"""The jobs of tests/engine/test_fenced_body_start.py: each notes when its body starts (in a file for the
node processes, in this module for the tests that drive an executor in-process)."""

from __future__ import annotations

import os
import threading
import time


def sleepy() -> None:
    """Leaves ``run_id wall-clock-start`` in ``$FENCED_STARTS`` as its body starts, then sleeps
    ``$FENCED_BODY`` seconds (each node process its own): a node running these one at a time
    keeps a queue of them waiting for its worker."""
    import tickwork

    run = tickwork.current_run()
    # O_APPEND writes of one short line are atomic: the file is the ground truth of body starts.
    fd = os.open(os.environ["FENCED_STARTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{run.run_id} {time.time():.6f}\n".encode())
    os.close(fd)
    time.sleep(float(os.environ["FENCED_BODY"]))


#: In-process jobs of the engine and executor tests: which bodies started, and the gate the
#: first one waits at (so that the others queue behind the executor's only worker).
started: list[str] = []
first_started = threading.Event()
gate = threading.Event()


def held(name: str) -> None:
    """Notes that its body started, then waits for :data:`gate` (at most 10 s)."""
    started.append(name)
    first_started.set()
    gate.wait(10)


async def held_async(name: str) -> None:
    """:func:`held` as a coroutine (it only notes its start: nothing queues on an event loop)."""
    started.append(name)
