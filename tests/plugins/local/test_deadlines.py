"""The local executor's watchdog: deadlines fire once, cancelled ones never, and ended runs let go
of their watchdog at once (it held each run's call and closures for the whole timeout)."""

from __future__ import annotations

import gc
import threading

from tests.support.local_helpers import WAIT_S, Recorder, job_call
from tickwork.structures import RunStatus
from tickwork_local.deadlines import Deadlines
from tickwork_local.executor import LocalExecutor


def test_a_deadline_fires_its_callback_once() -> None:
    deadlines = Deadlines()
    deadlines.start()
    fired = threading.Event()
    calls: list[int] = []
    try:
        deadlines.add(0.01, lambda: (calls.append(1), fired.set()))
        assert fired.wait(WAIT_S)
        assert len(deadlines) == 0
    finally:
        deadlines.stop()
    assert calls == [1]


def test_a_cancelled_deadline_never_fires_and_is_compacted_away() -> None:
    deadlines = Deadlines()
    deadlines.start()
    fired: list[int] = []
    last = threading.Event()
    try:
        # 2 s: adding and cancelling 3,000 must end before the first is due, on a loaded machine too
        # (at 0.2 s, a CI run with the cores busy saw 714 of them fire before their cancel).
        entries = [deadlines.add(2.0, lambda i=i: fired.append(i)) for i in range(2999)]
        entries.append(deadlines.add(2.0, lambda: (fired.append(2999), last.set())))
        for entry in entries[:2999]:
            deadlines.cancel(entry)
            deadlines.cancel(entry)  # idempotent
        assert len(deadlines) == 1
        assert deadlines.kept() == 1  # each dropped as it came to the head of its lane
        assert last.wait(WAIT_S)
    finally:
        deadlines.stop()
    assert fired == [2999]


def test_deadlines_cancelled_behind_a_live_one_are_swept_out() -> None:
    deadlines = Deadlines()
    deadlines.start()
    fired: list[int] = []
    try:
        # Times long enough for the adds and cancels to end first on a loaded machine (see above).
        entries = [deadlines.add(2.0, lambda i=i: fired.append(i)) for i in range(3000)]
        entries += [deadlines.add(1.0, lambda i=i: fired.append(i)) for i in range(3000, 3010)]
        for entry in entries[1:3000]:
            deadlines.cancel(entry)
        assert len(deadlines) == 11
        assert deadlines.kept() < 2000  # swept once most of what was kept was cancelled
        done = threading.Event()
        deadlines.add(2.5, done.set)
        assert done.wait(WAIT_S)
    finally:
        deadlines.stop()
    # Each once; a lane's deadlines in the order they were added. (Which lane goes first
    # depends on how long adding 3,000 took; an earlier deadline in a new lane waking the
    # watchdog is test_numbers.py's huge-timeout test.)
    assert sorted(fired) == [0, *range(3000, 3010)]
    assert [i for i in fired if i >= 3000] == list(range(3000, 3010))


def test_runs_that_ended_leave_no_pending_watchdog() -> None:
    executor = LocalExecutor(max_workers=4)
    executor.start()
    try:
        recorders = [Recorder() for _ in range(200)]
        for run_id, recorder in enumerate(recorders, 1):
            executor.submit(job_call("sleep_for", timeout=300.0, run_id=run_id, seconds=0), recorder)
        for recorder in recorders:
            assert recorder.wait().status is RunStatus.SUCCEEDED
        assert len(executor._deadlines) == 0
    finally:
        executor.shutdown()


def test_a_run_still_going_keeps_its_watchdog_and_times_out() -> None:
    executor = LocalExecutor(max_workers=1)
    executor.start()
    try:
        recorder = Recorder()
        executor.submit(job_call("sleep_for", timeout=0.2, seconds=2.0), recorder)
        assert recorder.wait().status is RunStatus.TIMED_OUT
    finally:
        executor.shutdown(wait=False)


def test_ended_runs_leave_no_reference_cycles_behind() -> None:
    # A cycle keeps a run's call, context and callbacks alive until the collector finds it:
    # with many runs a second, that was most of a node's garbage collection.
    executor = LocalExecutor(max_workers=2)
    executor.start()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        recorders = [Recorder() for _ in range(100)]
        for run_id, recorder in enumerate(recorders, 1):
            executor.submit(job_call("sleep_for", timeout=300.0, run_id=run_id, seconds=0), recorder)
        for recorder in recorders:
            assert recorder.wait().status is RunStatus.SUCCEEDED
        del recorder, recorders
        gc.collect()
        ours = [type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith(("tickwork", "tests"))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
        executor.shutdown()
    assert ours == []
