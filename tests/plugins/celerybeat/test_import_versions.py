"""``tickwork import celery-beat`` writes versions (in-process, on SQLite, PostgreSQL and MySQL):
version 1 of each imported schedule by the OS user who ran it, and with ``--replace`` a new version
only for the entries whose definition changed."""

from __future__ import annotations

import getpass
import sys
import uuid
from pathlib import Path

import pytest

import tickwork
from tests.support.servers.configs import BACKENDS, ConfigFor
from tickwork.cli import main

APP = """
from celery import Celery
from celery.schedules import crontab

app = Celery("proj", broker="memory://")
app.conf.timezone = "UTC"
app.conf.beat_schedule = {
    "report": {"task": "proj.tasks.report", "schedule": crontab(hour=7, minute=30)},
    "ping": {"task": "proj.tasks.ping", "schedule": 30.0},
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_import_is_versioned_by_who_ran_it(
    backend: str, config_for: ConfigFor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = f"beatproj_{uuid.uuid4().hex[:8]}"  # a module name of its own: imported in this process
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    app_file = tmp_path / package / "celery.py"
    app_file.write_text(APP)
    store = config_for(backend, migrated=True)
    config = tmp_path / "tickwork.toml"
    config.write_text(f'{store.toml()}\n[executor.celery]\napp = "{package}.celery:app"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))

    assert main(["-c", str(config), "import", "celery-beat", f"{package}.celery:app"]) == 0
    user = getpass.getuser()
    with tickwork.connect(config) as admin:
        assert [(v.version, v.by) for v in admin.versions("report")] == [(1, user)]
        assert admin.versions("report")[0].definition["expression"] == "30 7 * * *"

    app_file.write_text(APP.replace("crontab(hour=7, minute=30)", "crontab(hour=8, minute=0)"))
    for module in [m for m in sys.modules if m.startswith(package)]:
        monkeypatch.delitem(sys.modules, module)  # the app is read again
    assert main(["-c", str(config), "import", "celery-beat", f"{package}.celery:app", "--replace"]) == 0
    with tickwork.connect(config) as admin:
        latest = admin.versions("report")[-1]
        assert (latest.version, latest.by) == (2, user)
        assert latest.changes == {"expression": {"old": "30 7 * * *", "new": "0 8 * * *"}}
        assert [v.version for v in admin.versions("ping")] == [1]  # unchanged: no version
