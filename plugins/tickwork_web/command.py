"""``tickwork web [--host H] [--port P]``: serve the dashboard with uvicorn until Ctrl-C."""

from __future__ import annotations

import argparse
import errno
import logging
import socket
from typing import TYPE_CHECKING, ClassVar

from tickwork.errors import ConfigError
from tickwork.plugin import Command

from .requirements import require
from .settings import DEFAULT_HOST, DEFAULT_PORT, WebSettings

if TYPE_CHECKING:
    from tickwork.config import Config

log = logging.getLogger("tickwork.web")


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r} (a number from 1 to 65535, or 0 for any)") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {value} (a number from 1 to 65535, or 0 for any)")
    return value


def listening_socket(host: str, port: int) -> socket.socket:
    """The server's socket, bound here rather than by uvicorn: uvicorn logs a busy port in several
    lines and exits 1 (3 through the CLI), where a taken address is invalid input: one line, exit 2.

    :raises tickwork.ConfigError: naming the address and why it cannot be used
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: unknown host ({exc.strerror})") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        reason = "the port is already in use" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
        raise ConfigError(
            f"cannot listen on {host}:{port}: {reason}; choose another with --port or [web] port (0: any free one)"
        ) from None
    sock.set_inheritable(True)
    return sock


class WebCommand(Command):
    help = "serve the web dashboard (schedules, history, nodes, actions) until Ctrl-C"
    default_log_level: ClassVar[str] = "INFO"  # the action log is INFO

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--host", help=f"address to listen on (default: [web] host, else {DEFAULT_HOST})")
        parser.add_argument(
            "--port", type=_port, help=f"port to listen on (default: [web] port, else {DEFAULT_PORT}; 0: any free one)"
        )

    def run(self, args: argparse.Namespace, config: Config) -> int:
        require()
        import uvicorn

        from .application import build_app

        settings = WebSettings.from_config(config)
        host = args.host or settings.host
        port = settings.port if args.port is None else args.port
        sock = listening_socket(host, port)
        app = build_app(config, settings=settings)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False))
        log.info(
            "dashboard for %s; actions %s",
            config.source or "the default configuration",
            "enabled (bearer token set)" if settings.token else "disabled (read-only: no token configured)",
        )
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()
        return 0
