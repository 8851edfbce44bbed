"""A node's way out: give back what it holds, wait for running jobs (``[scheduler]
shutdown_grace``, cut short by a second signal), record them, leave the cluster, close the store."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import TYPE_CHECKING

from ..errors import StoreError

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger("tickwork.node")


def leave(node: Node, grace: float, abort: threading.Event, *, announce_signals: bool) -> None:
    """Everything after the engine stopped claiming; every step runs even if an earlier one failed
    (the database may be gone: the next start releases what is left)."""
    engine = node.engine
    try:
        # First, so that other nodes can still run them on time.
        engine.release_held()
    except StoreError as exc:
        log.warning("cannot reach the store to give back fires claimed ahead (%s); other nodes release them", exc)
    except Exception:
        log.exception("could not give back claims taken ahead of their time")
    try:
        drain(node, grace, abort, announce_signals=announce_signals)
    except StoreError as exc:
        log.warning("cannot reach the store to record the last runs (%s); the next start releases them", exc)
    except Exception:
        log.exception("could not record the last runs")
    # The rest of the engine's way out: record what ended meanwhile, give up pending retries,
    # release claims it no longer tracks. Its errors are logged by the engine; the store may be
    # gone (the next start releases then).
    with contextlib.suppress(Exception):
        engine.shutdown(0)
    for executor in node.executors.values():
        executor.shutdown(wait=False)
    try:
        # Whatever happened before (runs still going after a second signal or past the grace, a
        # lost answer, an end that could not be written), this node leaves nothing claimed: one
        # statement when there is nothing to release.
        released = node.store.release_node(node.node_id, f"node {node.node_id} stopped before the run ended")
        if released:
            log.warning("released %d claim(s) at shutdown", released)
    except StoreError as exc:
        log.warning("cannot reach the store to release this node's claims (%s); other nodes release them", exc)
    except Exception:
        log.exception("could not release claims at shutdown")
    node.membership.stop()
    node.store.close()


def drain(node: Node, grace: float, abort: threading.Event, *, announce_signals: bool) -> None:
    """Wait up to ``grace`` seconds for running jobs, saying which, unless ``abort`` is set."""
    engine = node.engine
    running = engine.in_flight
    if not running:
        return
    names = sorted({f.claim.spec.name for f in running.values()})
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    log.info(
        "stopping: waiting up to %gs (scheduler.shutdown_grace) for %d running job(s) to end: %s%s",
        grace,
        len(running),
        shown,
        "; send SIGINT/SIGTERM again to stop now" if announce_signals else "",
    )
    deadline = time.monotonic() + grace
    while engine.in_flight and not abort.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        engine.drain(min(0.1, left))
    if engine.in_flight:
        log.warning("stopped waiting with %d job(s) still running; they are recorded abandoned", len(engine.in_flight))
