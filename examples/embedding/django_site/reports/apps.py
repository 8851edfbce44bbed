"""Start a tickwork node with the Django process (when ``TICKWORK_EMBED=1``)."""

from __future__ import annotations

import os

from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "reports"

    def ready(self) -> None:
        # ready() also runs for every management command (migrate, shell, tickwork_node): start
        # a node only in the process meant to embed one. Under runserver, also require
        # RUN_MAIN == "true" (the serving child, not the autoreloader), or use --noreload.
        if os.environ.get("TICKWORK_EMBED") != "1":
            return
        import tickwork

        self.tickwork = tickwork.Node.from_config(jobs=["reports.jobs"]).start()
        # start() registered node.stop() to run at interpreter exit.
