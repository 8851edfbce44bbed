"""CPU per fire of the otel plugin: a burst drained by one in-process SQLite node
(benchmarks/drain_in_process.py), alternating four set-ups, each in a fresh process::

    python benchmarks/otel_per_fire.py                 # 30,000 schedules, 5 rounds
    python benchmarks/otel_per_fire.py 60000 --rounds 7

* ``blocked``: ``[plugins] block = ["otel"]``, as if tickwork[otel] were not installed;
* ``no [otel]``: the plugin loaded (its hooks called), no ``[otel]`` table: the default;
* ``[otel] none``: spans and metrics recorded, exported nowhere (``OTEL_*_EXPORTER=none``);
* ``[otel] otlp``: exported over OTLP/HTTP to a collector stand-in in this process (it answers
  200 to every request, so the exporting costs what it costs against a real collector; its own
  CPU is not counted).

Prints the median (and the lowest) engine-thread and process CPU per fire of each set-up (µs). Timings drift with
the machine: the rounds alternate the set-ups so that drift spreads over all of them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

DRAIN = Path(__file__).with_name("drain_in_process.py")


class Collector(BaseHTTPRequestHandler):
    """Takes every OTLP/HTTP export and answers 200 with an empty (valid) protobuf body."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("schedules", type=int, nargs="?", default=30_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    # Every span exported (the SDK's default queue of 2,048 drops most of a burst's).
    otel = {"OTEL_BSP_MAX_QUEUE_SIZE": str(args.schedules * 2)}
    setups = {
        "blocked": (["--block", "otel"], {}),
        "no [otel]": ([], {}),
        "[otel] none": (["--otel"], {**otel, "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}),
        "[otel] otlp": (
            ["--otel"],
            {
                **otel,
                "OTEL_TRACES_EXPORTER": "otlp",
                "OTEL_METRICS_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}",
            },
        ),
    }
    results: dict[str, list[dict[str, float]]] = {name: [] for name in setups}
    for _ in range(args.rounds):
        for name, (flags, env) in setups.items():
            done = subprocess.run(
                [sys.executable, str(DRAIN), str(args.schedules), *flags],
                env={**base, **env},
                capture_output=True,
                text=True,
                check=True,
            )
            results[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    server.shutdown()
    print(f"{args.schedules} schedules, {args.rounds} rounds; CPU µs per fire, median (min)")
    print(f"{'set-up':<14} {'engine thread':>16} {'process':>16}")
    for name, runs in results.items():
        engine = [r["engine_us_per_fire"] for r in runs]
        process = [r["process_us_per_fire"] for r in runs]
        print(
            f"{name:<14} {statistics.median(engine):>8.1f} ({min(engine):>5.1f})"
            f" {statistics.median(process):>8.1f} ({min(process):>5.1f})"
        )


if __name__ == "__main__":
    main()
