"""Peak RSS growth of a node whose ``http`` executor gets a gzip bomb as its answer.

Run: ``python benchmarks/http_gzip_bomb.py [--mib 1024] [--cap 65536] [--json]``

A loopback server (this process) answers ``500`` with ``Content-Encoding: gzip`` and a body that
inflates to ``--mib`` MiB. A child process (the "node") starts an ``HTTPExecutor`` with
``max_response_bytes = --cap``, warms up with one small gzip answer, then runs the bomb; the
growth of its peak RSS (``ru_maxrss``) across the bomb is printed. Before the bounded decoder,
1 GiB grew the node by about 130 MiB; it should now stay within a few times ``--cap``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import subprocess
import sys
import threading
import zlib
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHUNK = 1 << 20


def gzip_of(mib: int) -> bytes:
    """gzip of ``mib`` MiB of one repeated letter (about 1,000 : 1)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = b"A" * CHUNK
    parts = [packer.compress(block) for _ in range(mib)]
    parts.append(packer.flush())
    return b"".join(parts)


def serve(bomb: bytes, small: bytes) -> ThreadingHTTPServer:
    class Bomb(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = bomb if self.path == "/bomb" else small
            self.send_response(500)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the executor hangs up once it has read enough
                self.wfile.write(body)

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: Any, client_address: Any) -> None:
            # The executor hangs up on purpose once it has read enough; other errors are worth a traceback.
            if not isinstance(sys.exc_info()[1], ConnectionError):
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", 0), Bomb)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def child(base: str, cap: int) -> None:
    """The node: one warm-up request, then the bomb; prints the peak RSS growth as JSON."""
    from tickwork.structures import JobCall
    from tickwork_http import HTTPExecutor

    done = threading.Event()
    errors: list[str | None] = []

    def run(path: str, run_id: int) -> None:
        done.clear()
        call = JobCall(
            run_id=run_id,
            schedule="bomb",
            scheduled_for=datetime(2024, 1, 1, tzinfo=UTC),
            target=base + path,
            arguments={},
            timeout=60.0,
        )
        executor.submit(call, lambda outcome: (errors.append(outcome.error), done.set()))
        if not done.wait(120):
            raise SystemExit("no outcome within 120 s")

    executor = HTTPExecutor(max_response_bytes=cap, timeout=60)
    executor.start()
    try:
        run("/small", 1)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        run("/bomb", 2)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    finally:
        executor.shutdown()
    error = errors[-1] or ""
    # ru_maxrss is in KiB on Linux.
    print(json.dumps({"growth_bytes": (after - before) * 1024, "error_chars": len(error), "error": error[:60]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="MiB the bomb inflates to (default 1024)")
    parser.add_argument("--cap", type=int, default=65536, help="max_response_bytes (default 65536)")
    parser.add_argument("--json", action="store_true", help="print the child's JSON line only")
    parser.add_argument("--child", metavar="BASE_URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.cap)
        return
    bomb = gzip_of(args.mib)
    small = zlib.compress(b"warm-up error page " * 100, 9, zlib.MAX_WBITS | 16)
    server = serve(bomb, small)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        result = subprocess.run(
            [sys.executable, __file__, "--child", base, "--cap", str(args.cap)],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
    finally:
        server.shutdown()
        server.server_close()
    line = result.stdout.strip().splitlines()[-1]
    if args.json:
        print(line)
        return
    measured = json.loads(line)
    print(
        f"gzip bomb: {len(bomb):,} bytes inflating to {args.mib} MiB, max_response_bytes = {args.cap:,}: "
        f"peak RSS grew by {measured['growth_bytes'] / 1024:,.0f} KiB "
        f"({measured['growth_bytes'] / args.cap:.1f} x max_response_bytes)"
    )


if __name__ == "__main__":
    main()
