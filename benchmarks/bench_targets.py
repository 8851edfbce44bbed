"""Measure tickwork against the targets of issues #7 and #18 with ``tickwork bench`` and say which were met.

Run: ``python benchmarks/bench_targets.py [--pg-url URL] [--only NAME ...] [--rounds N] [--out DIR]``

Each target is one ``python -m tickwork_bench`` run (the exact command is printed, so a number in
docs/benchmarks.md can be reproduced); the verdict compares the measured numbers with the target.
With ``--rounds N`` each run repeats its cells N times (``tickwork bench --rounds``): the verdict is
taken on the median of every number over the rounds, and how many single rounds met the target is
printed beside it. Ratios are those of one round (raw/tw and vs-membership, as the bench computes
them), so the median of a ratio is the median of the rounds' ratios.
Nothing here is asserted in a test: timings depend on the machine and on what else runs on it
(the ``other%`` column of the bench table shows that).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Doc = dict[str, Any]


def cmd(text: str) -> list[str]:
    """Bench arguments written as one command-line string."""
    return shlex.split(text)


Verdict = tuple[bool, str]


def cells(doc: Doc, **match: Any) -> list[Doc]:
    return [c for c in doc["cells"] if all(c.get(k) == v for k, v in match.items()) and c["metrics"]]


def no_duplicates(doc: Doc) -> bool:
    return all(c["metrics"].get("duplicates", 0) == 0 for c in doc["cells"])


def burst_10k_4_nodes(doc: Doc) -> Verdict:
    tw = [c for c in cells(doc, nodes=4, workload="burst") if c["claim"] != "raw"]
    best = max(tw, key=lambda c: c["metrics"]["fires_per_s"] or 0.0)
    rate = best["metrics"]["fires_per_s"] or 0.0
    dups = "0" if no_duplicates(doc) else ">0"
    text = f"best {best['claim']}/{best['membership']}: {rate:,.0f} fires/s; duplicates {dups}"
    return rate >= 10_000 and no_duplicates(doc), text


def steady_3_nodes(doc: Doc) -> Verdict:
    parts, ok = [], True
    for c in cells(doc, nodes=3, workload="steady") + cells(doc, nodes=3, workload="spread"):
        m = c["metrics"]
        met = (m["lag_p99_ms"] or 1e9) <= 25 and m["missed"] == 0 and m["duplicates"] == 0
        ok = ok and met
        parts.append(
            f"{c['workload']} {c['claim']}/{c['membership']}: p99 {m['lag_p99_ms']:.0f} ms, missed {m['missed']}"
        )
    return ok and bool(parts), "; ".join(parts)


def sqlite_1_node(doc: Doc) -> Verdict:
    best = max(cells(doc, store="sqlite", nodes=1, workload="burst", membership="single"), key=_rate)
    return _rate(best) >= 3_000 and no_duplicates(doc), f"best {best['claim']}: {_rate(best):,.0f} fires/s"


def _rate(c: Doc) -> float:
    return float(c["metrics"]["fires_per_s"] or 0.0)


def _cost(c: Doc) -> float:
    m = c["metrics"]
    return float(m["cpu_s_per_1k_fires"] or 0.0) + float(m.get("db_cpu_s_per_1k_fires") or 0.0)


def stored_1m(docs: dict[str, Doc]) -> Verdict:
    (small,) = [c for c in cells(docs["10k"], claim="skip-locked")]
    (large,) = [c for c in cells(docs["1m"], claim="skip-locked")]
    ratio = _cost(large) / _cost(small)
    rss = large["metrics"]["node_rss_max_mb"]
    text = (
        f"node+db CPU per 1k fires {_cost(small):.3f}s (10k stored) vs {_cost(large):.3f}s (1M): {ratio:.2f}x; "
        f"fires/s {_rate(small):,.0f} vs {_rate(large):,.0f}; node RSS {rss:.0f} MB"
    )
    return ratio <= 1.2 and rss <= 150, text


def spread_3_nodes(doc: Doc) -> Verdict:
    """Issue #18: 1,000 spread fires/s on 3 nodes, every membership measured."""
    parts, ok = [], True
    for c in cells(doc, nodes=3, workload="spread"):
        m = c["metrics"]
        cpu, stmts, p99 = m["cpu_s_per_1k_fires"] or 1e9, m["statements_per_fire"] or 1e9, m["lag_p99_ms"] or 1e9
        ok = ok and cpu <= 0.25 and stmts <= 0.2 and p99 <= 25 and m["missed"] == 0 and m["duplicates"] == 0
        parts.append(f"{c['membership']}: {cpu:.3f} s CPU/1k, {stmts:.3f} statements/fire, p99 {p99:.0f} ms")
    return ok and bool(parts), "; ".join(parts)


def _share_of_raw(doc: Doc, **match: Any) -> list[tuple[Doc, float]]:
    """(cell, fires/s as a share of the raw loop's) for the tickwork cells matching ``match``."""
    (raw,) = cells(doc, claim="raw", **match)
    return [(c, _share(c, raw)) for c in cells(doc, **match) if c["claim"] != "raw"]


def _share(c: Doc, raw: Doc) -> float:
    """Fires/s as a share of the raw loop's in the same round (the bench's raw/tw, inverted)."""
    ratio = c["metrics"].get("raw_ratio")
    return 1.0 / float(ratio) if ratio else _rate(c) / _rate(raw)


def burst_share(doc: Doc, floor: float, **match: Any) -> Verdict:
    shares = _share_of_raw(doc, **match)
    text = "; ".join(
        f"{c['claim']}/{c['membership']}: {_rate(c):,.0f} fires/s = {share:.2f} x raw" for c, share in shares
    )
    return bool(shares) and all(share >= floor for _, share in shares) and no_duplicates(doc), text


def hashring_near_all(doc: Doc) -> Verdict:
    by = {c["membership"]: c for c in cells(doc, nodes=4, workload="burst") if c["claim"] != "raw"}
    ratio = by["hashring"]["metrics"].get("baseline_ratio") or _rate(by["hashring"]) / _rate(by["all"])
    rates = f"hashring {_rate(by['hashring']):,.0f} vs all {_rate(by['all']):,.0f} fires/s"
    return ratio >= 0.9, f"{rates}: {ratio:.2f}"


@dataclass(frozen=True)
class Target:
    name: str
    goal: str
    runs: dict[str, list[str]]
    judge: Callable[[dict[str, Doc]], Verdict]


TARGETS = [
    Target(
        "burst-pg-4",
        "PostgreSQL, 4 nodes, 10,000 due at once: >= 10,000 fires/s (best strategy), 0 duplicates",
        {
            "run": cmd(
                "--store postgres --claim skip-locked,optimistic,unique-fire,advisory --membership hashring,all "
                "--nodes 4 --workload burst --schedules 10000"
            )
        },
        lambda docs: burst_10k_4_nodes(docs["run"]),
    ),
    Target(
        "steady-pg-3",
        "PostgreSQL, 3 nodes, 1,000 schedules every second (aligned and spread): p99 lag <= 25 ms, 0 missed, 0 dups",
        {
            "run": cmd(
                "--store postgres --claim skip-locked --membership hashring,all --nodes 3 --workload steady,spread "
                "--steady-schedules 1000 --steady-seconds 10"
            )
        },
        lambda docs: steady_3_nodes(docs["run"]),
    ),
    Target(
        "burst-sqlite-1",
        "SQLite, 1 node, 10,000 due at once: >= 3,000 fires/s",
        {"run": cmd("--store sqlite --claim optimistic,unique-fire --nodes 1 --workload burst --schedules 10000")},
        lambda docs: sqlite_1_node(docs["run"]),
    ),
    Target(
        "stored-1m",
        "1,000,000 stored schedules: per-fire cost within 1.2x of 10,000 stored; node RSS <= 150 MB",
        {
            "10k": cmd("--store postgres --claim skip-locked --nodes 1 --workload burst --schedules 10000 --no-raw"),
            "1m": cmd(
                "--store postgres --claim skip-locked --nodes 1 --workload burst --schedules 10000 "
                "--stored 1000000 --no-raw"
            ),
        },
        stored_1m,
    ),
    Target(
        "spread-pg-3",
        "#18: 3 PostgreSQL nodes, 1,000 spread fires/s: <= 0.25 s node CPU per 1,000 fires, <= 0.2 statements "
        "per fire, p99 lag <= 25 ms (all and hashring)",
        {
            "run": cmd(
                "--store postgres --claim skip-locked --membership all,hashring --nodes 3 --workload spread "
                "--steady-schedules 1000 --steady-seconds 10 --no-raw"
            )
        },
        lambda docs: spread_3_nodes(docs["run"]),
    ),
    Target(
        "burst-pg-100k",
        "#18: 4 PostgreSQL nodes, 100,000 due at once: >= 0.65 x the raw loop, 0 duplicates (all and hashring)",
        {
            "run": cmd(
                "--store postgres --claim skip-locked --membership all,hashring --nodes 4 --workload burst "
                "--schedules 100000"
            )
        },
        lambda docs: burst_share(docs["run"], 0.65, nodes=4),
    ),
    Target(
        "hashring-10k",
        "#18: 4 PostgreSQL nodes, 10,000 due at once: hashring within 10 % of all",
        {
            "run": cmd(
                "--store postgres --claim skip-locked --membership all,hashring --nodes 4 --workload burst "
                "--schedules 10000 --no-raw"
            )
        },
        lambda docs: hashring_near_all(docs["run"]),
    ),
    Target(
        "burst-sqlite-100k",
        "#18: SQLite, 1 node, 100,000 due at once: >= 0.35 x the raw loop",
        {"run": cmd("--store sqlite --claim optimistic --nodes 1 --workload burst --schedules 100000")},
        lambda docs: burst_share(docs["run"], 0.35, nodes=1),
    ),
]


def one_round(doc: Doc, round_no: int) -> Doc:
    """The run's document with only the cells of one round."""
    return {**doc, "cells": [c for c in doc["cells"] if c.get("round_no", 1) == round_no]}


def medians(doc: Doc) -> Doc:
    """The run's document with one cell per measured cell, its numbers the medians over the rounds
    (``tickwork bench --rounds``'s summary); duplicates are those of all rounds together."""
    summary_cells = []
    for s in doc["summary"]:
        metrics = {key: spread["median"] for key, spread in s["metrics"].items()}
        metrics["duplicates"] = s["duplicates"]
        summary_cells.append({**s, "metrics": metrics})
    return {**doc, "cells": summary_cells}


def judge(target: Target, docs: dict[str, Doc], rounds: int) -> Verdict:
    """The target's verdict; with several rounds, on the medians, and how many rounds met it."""
    if rounds == 1:
        return target.judge(docs)
    met, text = target.judge({key: medians(doc) for key, doc in docs.items()})
    each = [target.judge({key: one_round(doc, r) for key, doc in docs.items()}) for r in range(1, rounds + 1)]
    failed = [doc for doc in docs.values() for s in doc["summary"] if s["failed_rounds"]]
    text = f"median of {rounds} rounds: {text}; met in {sum(ok for ok, _ in each)} of {rounds} single rounds"
    if failed:
        text += f"; {len(failed)} cell(s) failed a round (duplicates or errors): not met"
    for r, (ok, round_text) in enumerate(each, start=1):
        text += f"\n           round {r}: {'met' if ok else 'missed'}: {round_text}"
    return met and not failed, text


def run_bench(args: list[str], out: Path, pg_url: str | None) -> Doc:
    command = [sys.executable, "-m", "tickwork_bench", *args, "--out", str(out), "--no-progress"]
    if pg_url and "postgres" in args[args.index("--store") + 1]:
        command += ["--pg-url", pg_url]
    print("$ python -m tickwork_bench " + " ".join(command[3:]), flush=True)
    subprocess.run(command, check=False)
    return dict(json.loads(out.read_text()))


def _rounds(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pg-url", help="admin URL passed to tickwork bench --pg-url")
    ap.add_argument("--only", action="append", choices=[t.name for t in TARGETS])
    ap.add_argument("--out", type=Path, help="keep the JSON results here (default: a temporary directory)")
    ap.add_argument(
        "--rounds", type=_rounds, default=1, help="repeat every cell this many times and judge the medians (default 1)"
    )
    args = ap.parse_args()
    out_dir = args.out or Path(tempfile.mkdtemp(prefix="tickwork-targets-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    verdicts = []
    for target in TARGETS:
        if args.only and target.name not in args.only:
            continue
        rounds = ["--rounds", str(args.rounds)] if args.rounds > 1 else []
        docs = {
            key: run_bench(argv + rounds, out_dir / f"{target.name}-{key}.json", args.pg_url)
            for key, argv in target.runs.items()
        }
        met, text = judge(target, docs, args.rounds)
        verdicts.append((target, met, text))
    print()
    for target, met, text in verdicts:
        print(f"[{'MET   ' if met else 'MISSED'}] {target.goal}\n         measured: {text}")
    print(f"results: {out_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
