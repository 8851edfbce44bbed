"""Jobs declared for tests/testing/test_testing_kit.py (the harness imports them by module name)."""

from __future__ import annotations

import tickwork

#: What each run saw: (schedule, scheduled_for, attempt) from tickwork.current_run().
SEEN: list[tuple[str, object, int]] = []
FLAKY_FAILURES = {"left": 0}


@tickwork.every("10s", name="harness.tick")
def tick() -> str:
    run = tickwork.current_run()
    SEEN.append((run.schedule, run.scheduled_for, run.attempt))
    return f"tick {run.scheduled_for:%H:%M:%S}"


@tickwork.cron("30 2 * * *", name="harness.nightly", timezone="Europe/Berlin")
def nightly() -> None:
    SEEN.append((tickwork.current_run().schedule, tickwork.current_run().scheduled_for, 1))


def flaky() -> str:
    """Fails while FLAKY_FAILURES["left"] > 0 (not declared: added as a spec)."""
    if FLAKY_FAILURES["left"] > 0:
        FLAKY_FAILURES["left"] -= 1
        raise RuntimeError("not yet")
    return "ok"
