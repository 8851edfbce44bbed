"""``tickwork web [--host H] [--port P]``: serve the dashboard with uvicorn until Ctrl-C."""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING, ClassVar

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
        app = build_app(config, settings=settings)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False))
        log.info(
            "dashboard for %s; actions %s",
            config.source or "the default configuration",
            "enabled (bearer token set)" if settings.token else "disabled (read-only: no token configured)",
        )
        server.run()
        return 0
