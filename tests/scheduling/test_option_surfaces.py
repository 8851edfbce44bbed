"""The four places that list a schedule's rarer options read them from the one table
(``tickwork.scheduling.options.STORED``): the stores' ``options`` column, the admin API's JSON
(``jobs show --json``, the dashboard's ``/api``), ``tickwork jobs show`` and the dashboard's
schedule page. Each lists exactly the table's options, and one added to the table shows up in
all four."""

from __future__ import annotations

import html
import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select
from starlette.testclient import TestClient

import tickwork
import tickwork_web
from tests.support.forkedcli import run_tickwork
from tests.support.paths import REPO
from tests.support.webhelpers import RECORD, write_config
from tickwork.cli import main
from tickwork.scheduling import options
from tickwork.scheduling.options import BY_NAME, STORED, Described, Shown, shown
from tickwork.sql.schema import schedules

#: Every stored option away from its default, as a user gives them.
EVERY_OPTION: dict[str, Any] = {
    "pause_after_failures": 4,
    "jitter": "10m",
    "start_at": "2026-01-01T09:00:00Z",
    "end_at": "2099-01-01T00:00:00Z",
    "misfire_grace": "2m",
    "max_catchup": 2,
    "max_runs": 5,
    "on_finish": "remove",
    "on_abandon": "rerun",
    "also": ["30 18 * * *"],
    "exclude": ["*-12-25"],
    "overlap": "allow",
    "max_concurrent": 3,
    "concurrency_key": "billing",
    "concurrency_limit": 2,
    "holidays": "DE-BE",
    "on_holiday": "next",
}

#: What a person reads for them, in the table's order (the labels of jobs show and the page).
LABELS = [
    "pause after",
    "jitter",
    "starts",
    "ends",
    "misfire grace",
    "max catch-up",
    "max runs",
    "on abandon",
    "also at",
    "except",
    "overlap",
    "concurrency",
    "holidays",
]


def tw(config: Path, *args: str) -> str:
    """``tickwork ARGS`` as a subprocess importing what this process imports."""
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(REPO)) if p)
    done = run_tickwork(args, cwd=os.getcwd(), env={**os.environ, "PYTHONPATH": path, "TICKWORK_CONFIG": str(config)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def column(config: Path, name: str) -> dict[str, Any]:
    """The stored ``options`` column of schedule ``name``, as the database holds it."""
    engine = create_engine(f"sqlite:///{config.parent / 'web.db'}")
    try:
        with engine.connect() as conn:
            value = conn.execute(select(schedules.c.options).where(schedules.c.name == name)).scalar_one()
    finally:
        engine.dispose()
    return json.loads(value) if isinstance(value, str) else dict(value)


def shown_lines(text: str) -> dict[str, str]:
    """``jobs show``'s ``key: value`` lines."""
    return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)


def page_options(page: str) -> list[tuple[str, str]]:
    """The dashboard's option rows: the ``<dt>``/``<dd>`` pairs between Misfire and Declared in."""
    definition = page[page.index("<dt>Misfire</dt>") : page.index("<dt>Declared in</dt>")]
    return re.findall(r"<dt>([^<]+)</dt><dd>(.*?)</dd>", definition)[1:]


def test_each_stored_option_is_shown_on_its_own_line_or_with_another() -> None:
    showing = {o.name for o in STORED if o.show is not None}
    for option in STORED:
        assert (option.show is None) != (option.shown_with is None), option.name
        assert option.shown_with is None or option.shown_with in showing, option.name


def test_every_surface_lists_exactly_the_tables_options(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with tickwork.connect(config) as admin:
        info = admin.add("every", "0 3 * * *", RECORD, **EVERY_OPTION)
    assert [s.label for s in shown(info)] == LABELS
    written = {o.name: o.dump(getattr(info.spec, o.field)) for o in STORED}
    # The stores' column: every option, by name, as its codec writes it.
    assert column(config, "every") == written
    # The admin JSON, through the command line as a user runs it.
    listed = json.loads(tw(config, "--json", "jobs", "show", "every"))
    assert {name: listed[name] for name in written} == written
    # jobs show: a line for each, the options shown with another inside its line.
    lines = shown_lines(tw(config, "jobs", "show", "every"))
    assert [k for k in lines if k in LABELS] == LABELS
    assert lines["max runs"].strip() == "5, then remove (ran 0)"  # on_finish
    assert lines["overlap"].strip() == "allow (at most 3 at once; not retried)"  # max_concurrent
    assert lines["concurrency"].strip() == "key billing, at most 2 at once"  # concurrency_limit
    assert lines["also at"].strip() == "30 18 * * *" and lines["except"].strip() == "*-12-25"
    assert lines["ends"].strip() == "2099-01-01T00:00:00Z"
    # The dashboard's page: the same rows in the same order, in the same words.
    with TestClient(tickwork_web.app(config)) as c:
        rows = page_options(html.unescape(c.get("/schedules/every").text))
        api = c.get("/api/schedules/every").json()
    assert [label for label, _ in rows] == [label.capitalize() for label in LABELS]
    assert dict(rows)["Overlap"] == 'allow <div class="sub">at most 3 at once; not retried</div>'
    assert dict(rows)["Except"] == "<code>*-12-25</code>"
    assert "2099-01-01" in dict(rows)["Ends"]
    assert {name: api[name] for name in written} == written


def _runs_cap(d: Described) -> Shown | None:
    return None if d.spec.max_runs is None else Shown("runs cap", f"{d.spec.max_runs} fires")


def test_an_option_added_to_the_table_shows_up_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A new option: a second name for max_runs (a new field would need a ScheduleSpec field too).
    added = replace(BY_NAME["max_runs"], name="runs_cap", show=_runs_cap)
    monkeypatch.setattr(options, "STORED", (*STORED, added))
    config = write_config(tmp_path)
    monkeypatch.setenv("TICKWORK_CONFIG", str(config))
    with tickwork.connect(config) as admin:
        admin.add("capped", "0 3 * * *", RECORD, max_runs=7)
    assert column(config, "capped") == {"max_runs": 7, "runs_cap": 7}
    assert main(["--json", "jobs", "show", "capped"]) == 0
    assert json.loads(capsys.readouterr().out)["runs_cap"] == 7
    assert main(["jobs", "show", "capped"]) == 0
    assert shown_lines(capsys.readouterr().out)["runs cap"].strip() == "7 fires"
    with TestClient(tickwork_web.app(config)) as c:
        page = html.unescape(c.get("/schedules/capped").text)
        assert c.get("/api/schedules/capped").json()["runs_cap"] == 7
    assert ("Runs cap", "7 fires") in page_options(page)
