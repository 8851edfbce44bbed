"""Deterministic fault injection: the engine driven for thousands of steps on a fake clock over a
real SQLite store that fails at seeded random call sites — before a call, after it committed with
the answer lost, or both, in separate runs — with quick, slow, flaky and failing jobs. After every run, whatever failed:

- no (schedule, fire time, attempt) was executed twice;
- the loop never gave up (``run_once`` never raises);
- after a graceful stop nothing is left ``running``, neither a schedule nor a run;
- every fire time that came due either ran or is recorded in the history with a reason.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support.faulty_store import FaultyStore
from tests.support.stores import T0, Ticker
from tickwork import schedules as admin
from tickwork.abc import Executor, Membership, Store
from tickwork.engine import Engine, EngineSettings
from tickwork.scheduling.triggers import next_fire_times
from tickwork.structures import JobCall, Outcome, RunStatus, ScheduleSpec, ScheduleState
from tickwork.testing import FakeClock

STEP = 0.1  # seconds of fake time per engine step


class Solo(Membership):
    """This node owns everything and is always healthy (no heartbeat thread: deterministic)."""

    def start(self, store: Store, node_id: str) -> None:
        pass

    def stop(self) -> None:
        pass

    def owned_buckets(self) -> Sequence[int] | None:
        return None


class StepExecutor(Executor):
    """Runs nothing for real: a call ends after a number of steps its schedule's name decides
    (``slow`` jobs outlast their period), failing as the name says (``flaky`` jobs fail their
    first attempt, ``fail`` jobs every attempt)."""

    def __init__(self) -> None:
        super().__init__()
        self.step = 0
        self.executed: list[tuple[str, Any, int]] = []
        self._pending: list[tuple[int, JobCall, Callable[[Outcome], None]]] = []

    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        pass

    def submit(self, call: JobCall, on_done: Callable[[Outcome], None]) -> None:
        self.executed.append((call.schedule, call.scheduled_for, call.attempt))
        steps = 25 if call.schedule.startswith("slow") else 1
        self._pending.append((self.step + steps, call, on_done))

    def advance(self) -> None:
        self.step += 1
        due = [p for p in self._pending if p[0] <= self.step]
        self._pending = [p for p in self._pending if p[0] > self.step]
        for _, call, on_done in due:
            on_done(self.outcome(call))

    def finish_all(self) -> None:
        pending, self._pending = self._pending, []
        for _, call, on_done in pending:
            on_done(self.outcome(call))

    @staticmethod
    def outcome(call: JobCall) -> Outcome:
        if call.schedule.startswith("fail") or (call.schedule.startswith("flaky") and call.attempt == 1):
            return Outcome(RunStatus.FAILED, error=f"attempt {call.attempt} failed on purpose")
        return Outcome(RunStatus.SUCCEEDED)

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        pass


SCHEDULES = {
    "ok-1": {},
    "ok-2": {},
    "slow-1": {},
    "flaky-1": {"retries": 2, "retry_backoff": timedelta(seconds=0.2)},
    "flaky-2": {"retries": 2, "retry_backoff": timedelta(seconds=0.2)},
    "fail-1": {"retries": 1, "retry_backoff": timedelta(seconds=0.3)},
}


@pytest.mark.parametrize(("seed", "mode"), [(1, "before"), (2, "after"), (3, "both")])
def test_injected_store_faults_never_duplicate_strand_or_lose_a_fire(tmp_path: Path, seed: int, mode: str) -> None:
    clock = FakeClock()
    ticker = Ticker()
    store = FaultyStore(str(tmp_path / "t.db"), clock=clock, rng=random.Random(seed))
    store.upgrade()
    store.open()
    for name, extra in SCHEDULES.items():
        admin.add(store, ScheduleSpec(name, "interval", "1s", f"step:{name}", executor="step", **extra))  # type: ignore[arg-type]
    executor = StepExecutor()
    settings = EngineSettings(node_id="n1", lookahead=1.0, reap_interval=2.0, renew_interval=1.0)
    engine = Engine(store, {"step": executor}, Solo(), settings, clock=clock, monotonic=ticker)
    store.rate, store.mode = 0.05, mode
    for _ in range(2000):
        clock.advance(STEP)
        ticker.advance(STEP)
        executor.advance()
        engine.run_once()  # raises nothing, whatever the store does
    end = clock()
    store.rate = 0.0
    engine.stop()
    executor.finish_all()
    engine.shutdown(timeout=1.0)

    assert (store.injected > 20) == (mode != "after") and (store.lost > 20) == (mode != "before")
    executed = Counter(executor.executed)
    assert [key for key, n in executed.items() if n > 1] == [], "a fire attempt was executed twice"
    assert [s.name for s in store.list_schedules() if s.state is ScheduleState.RUNNING] == []
    history = store.history(limit=100_000)
    assert [r for r in history if r.status is RunStatus.RUNNING] == []
    recorded = {(r.schedule, r.scheduled_for): r for r in history if r.attempt == 1}
    for name in SCHEDULES:
        due = next_fire_times("1s", kind="interval", after=T0, n=int((end - T0).total_seconds()) - 5)
        missing = [t for t in due if (name, t) not in recorded]
        assert missing == [], f"{name}: {len(missing)} fire times neither ran nor were recorded"
        unexplained = [r for t in due if (r := recorded[(name, t)]).status is not RunStatus.SUCCEEDED and not r.error]
        assert unexplained == []
    succeeded = sum(1 for r in history if r.schedule.startswith("ok") and r.status is RunStatus.SUCCEEDED)
    assert succeeded > 0.7 * 2 * (end - T0).total_seconds()
    retried = {r.schedule for r in history if r.attempt > 1 and r.status is RunStatus.SUCCEEDED}
    assert retried == {"flaky-1", "flaky-2"}
    store.close()
