"""Before/after pairs of ``tickwork bench --workload handoff`` (docs/benchmarks.md, "Hand-off in
batches"): each cell run by the code before and after, one right after the other, so both meet
about the same load on a shared machine; each run measures the broker's raw publish rate too,
and the hand-off rate divided by it is the figure.

    python benchmarks/handoff_batches.py --before /tmp/base --out benchmarks/results/handoff-batches \\
        celery:5000:0 celery:20000:0 celery:5000:1 rq:5000:0 dramatiq:5000:0

``--before DIR``: a tree of the earlier code (``git archive <commit> | tar -x -C DIR``); its
``src/`` and ``plugins/`` go first on ``PYTHONPATH``. A cell is ``executor:schedules:beats``.
Prints one markdown row per run, with the load average before it (``uptime``'s first figure).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

BROKERS = {"celery": "amqp://guest:guest@127.0.0.1:5672//", "rq": "redis://127.0.0.1:6379/0",
           "dramatiq": "redis://127.0.0.1:6379/0"}  # fmt: skip


def run(tree: Path | None, executor: str, schedules: int, beats: int, out: Path) -> dict[str, object]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(str(tree / part) for part in ("src", "plugins"))
    argv = [sys.executable, "-m", "tickwork_bench", "--workload", "handoff", "--executor", executor,
            "--broker", BROKERS[executor], "--schedules", str(schedules), "--nodes", "2", "--beats", str(beats),
            "--no-progress", "--out", str(out)]  # fmt: skip
    load = os.getloadavg()[0]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if not out.exists():
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stdout}\n{done.stderr}")
    cell = json.loads(out.read_text())["cells"][0]
    return {"load": load, "cell": cell}


def row(label: str, executor: str, beats: int, result: dict[str, object]) -> str:
    cell: dict[str, object] = result["cell"]  # type: ignore[assignment]
    tw: dict[str, object] = cell.get("tickwork") or {}  # type: ignore[assignment]
    raw: dict[str, object] = cell.get("raw_publish") or {}  # type: ignore[assignment]
    to_raw = tw.get("to_raw")
    beat = cell.get("beat") or {}
    sent = sum(b["sent_in_minute"] for b in beat["by_beat"].values()) if beat else None  # type: ignore[index]
    return (
        f"| {label} | {executor} | {cell['schedules']:,} | {beats} | {result['load']:.1f} "
        f"| {tw.get('handed_off', 0):,} in {tw.get('handed_off_s') or 0:.2f} s "
        f"({tw.get('handed_off_per_s') or 0:,.0f}/s) "
        f"| {raw.get('per_s', 0):,.0f}/s | {'-' if to_raw is None else format(to_raw, '.2f')} "
        f"| {tw.get('duplicates', '-')} | {'-' if sent is None else f'{sent:,}'} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="a tree of the earlier code (its src/ and plugins/)")
    parser.add_argument("--out", type=Path, required=True, help="directory for each run's --out JSON")
    parser.add_argument("cells", nargs="+", help="executor:schedules:beats")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print("| code | executor | N | beats | load | handed off | raw publish | hand-off / raw | duplicates | beat sent |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for k, spec in enumerate(args.cells, 1):
        executor, schedules, beats = spec.split(":")
        trees = [("before", args.before), ("after", None)] if args.before else [("after", None)]
        for label, tree in trees:
            # Numbered by the cell's place: a cell given twice keeps both runs.
            out = args.out / f"{k:02d}-{executor}-{schedules}-beats{beats}-{label}.json"
            result = run(tree, executor, int(schedules), int(beats), out)
            print(row(label, executor, int(beats), result), flush=True)


if __name__ == "__main__":
    main()
