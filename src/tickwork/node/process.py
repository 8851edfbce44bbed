"""What a process that is a node's own (``tickwork run``, the benchmark's node processes) tunes
for itself: the garbage collector. A node embedded in an application tunes nothing: the process,
and with it the collector's policy, is the application's (docs/embedding.md#the-garbage-collector).
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger("tickwork.node")

#: The young-generation threshold of the garbage collector in a node's own process, when the
#: process still has the interpreter's default (700). A burst allocates a few objects per fire
#: that live for milliseconds (claims, calls, ends); at 700 they were promoted and walked again
#: by full collections over the spec cache: 2.1 s of a 10.5 s drain of 100,000 fires on SQLite.
#: At 10,000 most of them are freed before a collection sees them (0.27 s of collections; the
#: drain 20-30 % faster). See docs/benchmarks.md#bursts-of-100000-and-hashring-against-all.
GC_YOUNG_THRESHOLD = 10_000
#: CPython's default young-generation threshold (``gc.get_threshold()[0]``).
GC_DEFAULT_YOUNG_THRESHOLD = 700


def hold_gc() -> None:
    """Stop the garbage collector while a node in its own process starts (:meth:`Node.open`);
    :func:`tune_gc` starts it again. Nearly all a start allocates lives as long as the node: the
    job modules, each declared job's function and spec, the store's engine. With the collector
    on, importing 20,000 declared jobs and syncing them ran ever longer full collections over
    that growing heap, 14 % of the start's CPU (docs/benchmarks.md#start-up-2026-11-29). What the start
    leaves as cyclic garbage (about 800 objects with 20,000 jobs) is frozen with the rest
    instead of collected: a full collection there costs 0.2 s, the objects a few hundred KiB
    once."""
    gc.disable()


def tune_gc() -> None:
    """Tune the garbage collector for a process that runs one node and nothing else; call it once
    the node is open (:meth:`Node.open`), right before its loop.

    Everything built by then (modules, plugins, the job modules, the store's engine and metadata)
    lives as long as the node: :func:`gc.freeze` keeps it out of the collector's full passes, which
    otherwise stop the engine thread for 50-70 ms every few seconds under load, right when due runs
    are to be started (docs/benchmarks.md#steady-lag). The young-generation threshold is raised to
    :data:`GC_YOUNG_THRESHOLD`, unless the process chose its own (``PYTHONGC``-style start-up code,
    a wrapper script): a threshold that is not the interpreter's default is left as it is.

    Nothing is restored afterwards: the process ends with its node.
    """
    gc.freeze()
    gc.enable()  # after hold_gc(); on already
    before = gc.get_threshold()
    if before[0] == GC_DEFAULT_YOUNG_THRESHOLD:
        gc.set_threshold(GC_YOUNG_THRESHOLD, *before[1:])
    log.debug(
        "garbage collector tuned for this node's process: %d objects frozen, thresholds %s (were %s)",
        gc.get_freeze_count(),
        gc.get_threshold(),
        before,
    )
