"""``tickwork import celery-beat`` on a large beat_schedule: the whole command, end to end.

Run: ``.venv/bin/python benchmarks/import_celerybeat.py [N]`` (default 10,000 entries)

Writes a Celery app with ``N`` entries (a third each: weekday crontabs, crontabs restricting both
day fields, which become calendar expressions, and timedelta intervals) into a scratch directory
with a SQLite store, then times ``tickwork import celery-beat --dry-run`` and the import itself
as real processes (the stand-in ``celery`` executor of the tests is registered, as in the tests).
Prints the wall time of each and the schedules stored.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from tests.support.celerybeat_helpers import stored, tw

APP = """
from datetime import timedelta
from celery import Celery
from celery.schedules import crontab

app = Celery("proj", broker="memory://")
app.conf.timezone = "Europe/Oslo"
app.conf.beat_schedule = {}
for i in range(N):
    if i % 3 == 0:
        when = crontab(minute=i % 60, hour=i % 24, day_of_week="mon-fri")
    elif i % 3 == 1:
        when = crontab(minute=i % 60, hour=9, day_of_month="1-7", day_of_week=i % 7)
    else:
        when = timedelta(minutes=1 + i % 90)
    app.conf.beat_schedule[f"entry-{i}"] = {"task": f"proj.tasks.t{i % 50}", "schedule": when, "args": (i,)}
"""


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "proj").mkdir()
        (root / "proj" / "__init__.py").write_text("")
        (root / "proj" / "celery.py").write_text(APP.replace("range(N)", f"range({count})"))
        (root / "tickwork.toml").write_text('[store]\nplugin = "sqlite"\npath = "t.db"\n\n[executor.celery]\n')
        assert tw(root, "db", "upgrade").returncode == 0
        for label, extra in (("dry run", ["--dry-run"]), ("import", [])):
            started = time.perf_counter()
            done = tw(root, "import", "celery-beat", "proj.celery:app", *extra)
            elapsed = time.perf_counter() - started
            assert done.returncode == 0, done.stderr
            print(f"{label:8} {count:>7,} entries: {elapsed:6.2f} s")
        print(f"stored: {len(stored(root)):,} schedules")


if __name__ == "__main__":
    main()
