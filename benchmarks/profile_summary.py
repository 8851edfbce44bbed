"""Where a node's time goes: summarise ``py-spy record --format raw`` files (``tickwork bench --profile DIR``).

Run: ``/work/venv/bin/python benchmarks/profile_summary.py DIR/cell001-....txt [--top 25] [--frame NAME ...]``

Prints the share of samples per thread, the functions most often on top of the stack (self time),
and the inclusive share of every frame whose function name contains one of ``--frame`` (default:
the engine's and the store's main steps). Line numbers are dropped so a function counts once.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

DEFAULT_FRAMES = [
    "Engine.tick",
    "Engine._dispatch",
    "Engine._finish_completed",
    "Engine._sleep_seconds",
    "Engine._housekeeping",
    "SQLStore._claim_once",
    "SQLStore._record_runs",
    "SQLStore.finish",
    "PostgresStore._release",
    "SQLiteStore._release",
    "SQLStore.next_due",
    "SQLStore.now",
    "spec_from_row",
    "Engine._finish_for",
    "LocalExecutor.submit",
    "Connection._execute_context",
    "compile",
    "Cursor.execute",
    "Cursor.executemany",
    "Connection.wait",
    "process_result_value",
]
_LINE = re.compile(r" \(([^()]*):\d+\)")


def parse(path: Path) -> list[tuple[str, list[str], int]]:
    """``(thread, frames outermost first, samples)`` per collapsed stack."""
    stacks = []
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        parts = stack.split(";")
        thread = re.sub(r"^thread \(\d+\): ", "", parts[0])
        frames = [_LINE.sub(r" (\1)", f) for f in parts[1:]]
        stacks.append((thread, frames, int(count)))
    return stacks


def thread_group(name: str) -> str:
    """Pool threads are numbered; group them."""
    return re.sub(r"_\d+$", "_*", name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--frame", action="append", help="function name substring to show inclusive time for")
    args = ap.parse_args()
    for path in args.files:
        stacks = parse(path)
        total = sum(n for _, _, n in stacks) or 1
        print(f"== {path.name}: {total} samples")
        threads: Counter[str] = Counter()
        for thread, _, n in stacks:
            threads[thread_group(thread)] += n
        for thread, n in threads.most_common():
            print(f"  thread {thread:<28} {100 * n / total:5.1f}%")
        main_total = sum(n for t, _, n in stacks if t == "MainThread") or 1
        print(f"-- self time, MainThread ({main_total} samples)")
        leaf: Counter[str] = Counter()
        for thread, frames, n in stacks:
            if thread == "MainThread" and frames:
                leaf[frames[-1]] += n
        for frame, n in leaf.most_common(args.top):
            print(f"  {100 * n / main_total:5.1f}%  {frame}")
        print("-- inclusive, MainThread")
        inclusive: Counter[str] = Counter()
        wanted = args.frame or DEFAULT_FRAMES
        for thread, frames, n in stacks:
            if thread != "MainThread":
                continue
            seen = {f for f in frames if any(w in f.split(" (")[0] for w in wanted)}
            for f in seen:
                inclusive[f] += n
        for frame, n in inclusive.most_common(args.top * 2):
            print(f"  {100 * n / main_total:5.1f}%  {frame}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
