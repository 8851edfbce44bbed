"""Shared by the import tests: running ``tickwork`` as a subprocess, reading the schedules back,
and Celery's own fire times as the reference."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support.forkedcli import run_tickwork
from tests.support.paths import REPO
from tickwork.scheduling.triggers import get_trigger

#: Every stored schedule's next fires are compared over this many fires.
FIRES = 20


def tw(cwd: Path, *args: str, extra_path: tuple[Path, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``tickwork ARGS`` in ``cwd``, finding the repository's tests and ``extra_path`` too."""
    path = os.pathsep.join(str(p) for p in (*extra_path, REPO))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": path, "HOME": str(cwd)}
    done = run_tickwork(args, cwd=cwd, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def stored(cwd: Path) -> dict[str, dict[str, Any]]:
    """Every schedule of the store in ``cwd``'s tickwork.toml, by name (``jobs list --json``)."""
    listed = tw(cwd, "jobs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return {s["name"]: s for s in map(json.loads, listed.stdout.splitlines())}


def tickwork_times(schedule: dict[str, Any], start: datetime, n: int = FIRES) -> list[datetime]:
    """The next ``n`` fires after ``start`` of a stored schedule, by its trigger."""
    trigger = get_trigger(schedule["kind"], schedule["expression"], schedule["timezone"])
    out: list[datetime] = []
    current: datetime | None = start
    while len(out) < n:
        assert current is not None
        current = trigger.next_after(current)
        assert current is not None, f"{schedule['name']} stopped firing"
        out.append(current)
    return out


def celery_times(when: Any, start: datetime, n: int = FIRES) -> list[datetime]:
    """The next ``n`` fires after ``start`` of a Celery schedule, as Celery computes them: the
    schedule's ``remaining_estimate`` from the last run, with "now" at that run."""
    out: list[datetime] = []
    last = start
    for _ in range(n):
        when.nowfun = _at(last)
        last = (last + when.remaining_estimate(last)).astimezone(UTC)
        out.append(last)
    return out


def _at(moment: datetime) -> Callable[[], datetime]:
    return lambda: moment
