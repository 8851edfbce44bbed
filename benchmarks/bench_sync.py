"""Node start with many declared schedules, against the import time of the module declaring them.

Run: ``.venv/bin/python benchmarks/bench_sync.py [--schedules 20000] [--store sqlite|postgres]
[--pg-url URL]``

Writes a module declaring ``--schedules`` yearly cron jobs (nothing fires while measuring), then
times, each in a fresh process: importing the module alone; ``tickwork run --for 0.01`` on an empty
database (schema only: every schedule is created); and the same again on the now unchanged
database. Node-start times are wall clock from process start to exit, so they include the import.
Issue #18's target: node start <= 3 x import + 3 s in both cases. ``--pg-url`` must name an empty
PostgreSQL database. The lead measures alone; the test suite runs a tiny size only to check that
the script works.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TICKWORK = str(Path(sys.executable).parent / "tickwork")


def write_module(path: Path, count: int) -> None:
    one = '@tickwork.cron("0 0 1 1 *", name="sync-{i:06d}")\ndef job_{i}():\n    pass\n\n'
    path.write_text("import tickwork\n\n" + "".join(one.format(i=i) for i in range(count)))


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"bench_sync: {' '.join(args)} failed:\n{done.stderr}")
    return elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=20_000)
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-url", help="an empty PostgreSQL database (required for --store postgres)")
    args = parser.parse_args(argv)
    if args.store == "postgres" and not args.pg_url:
        parser.error("--store postgres needs --pg-url")
    with tempfile.TemporaryDirectory(prefix="tickwork-bench-sync-") as scratch:
        work = Path(scratch)
        write_module(work / "benchjobs.py", args.schedules)
        store = f'plugin = "postgres"\nurl = "{args.pg_url}"' if args.store == "postgres" else 'plugin = "sqlite"'
        (work / "tickwork.toml").write_text(f'[scheduler]\njobs = ["benchjobs"]\n[store]\n{store}\n')
        env = dict(os.environ, TICKWORK_CONFIG="", PYTHONPATH=str(work))
        # Compile once, so neither measurement pays for writing the .pyc.
        timed([sys.executable, "-c", "import benchjobs"], work, env)
        imported = timed([sys.executable, "-c", "import benchjobs"], work, env)
        timed([TICKWORK, "db", "upgrade"], work, env)
        empty = timed([TICKWORK, "run", "--for", "0.01"], work, env)
        unchanged = timed([TICKWORK, "run", "--for", "0.01"], work, env)
    target = 3 * imported + 3
    print(f"schedules        {args.schedules}")
    print(f"store            {args.store}")
    print(f"import           {imported:8.2f} s")
    print(f"start, empty     {empty:8.2f} s  ({empty / imported:.1f} x import)")
    print(f"start, unchanged {unchanged:8.2f} s  ({unchanged / imported:.1f} x import)")
    verdict = "met" if max(empty, unchanged) <= target else "missed"
    print(f"target           {target:8.2f} s  (3 x import + 3 s): {verdict}")


if __name__ == "__main__":
    main()
