"""``python manage.py tickwork_node``: a tickwork node with this project's settings and jobs."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

import tickwork


class Command(BaseCommand):
    help = "Run a tickwork node with this project's settings and jobs (SIGINT/SIGTERM stop it)."

    def handle(self, *args: Any, **options: Any) -> None:
        tickwork.Node.from_config(jobs=["reports.jobs"]).run()
