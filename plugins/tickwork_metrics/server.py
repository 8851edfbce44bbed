"""The HTTP endpoint of the metrics plugin: ``/metrics`` (Prometheus text) and ``/healthz``."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger("tickwork.metrics")


class MetricsServer:
    """Serves one node's registry and health on ``host:port`` from a daemon thread.

    :param health: returns (healthy, reason); ``/healthz`` answers 200 or 503 with the reason
    """

    def __init__(
        self, registry: CollectorRegistry, health: Callable[[], tuple[bool, str]], host: str, port: int
    ) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    outer._send(self, 200, generate_latest(registry), CONTENT_TYPE_LATEST)
                elif path in ("/healthz", "/health"):
                    ok, reason = health()
                    outer._send(self, 200 if ok else 503, (reason + "\n").encode(), "text/plain; charset=utf-8")
                else:
                    outer._send(self, 404, b"not found: try /metrics or /healthz\n", "text/plain; charset=utf-8")

            def log_message(self, format: str, *args: object) -> None:
                log.debug("%s %s", self.address_string(), format % args)

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.host = host
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="tickwork-metrics", daemon=True)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
