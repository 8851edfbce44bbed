"""Settings of the Django example: the least a project needs, plus the app that runs tickwork."""

from __future__ import annotations

SECRET_KEY = "example-only-not-secret"  # an example project: never use this key
DEBUG = False
ALLOWED_HOSTS: list[str] = []
INSTALLED_APPS = ["reports.apps.ReportsConfig"]
DATABASES: dict[str, dict[str, str]] = {}
USE_TZ = True

#: Read by the job, to show that jobs run with the project's settings loaded.
REPORTS_RECIPIENT = "ops@example.com"
