"""The dashboard's create and edit form takes ``overlap`` (a choice, validated by the admin API),
the schedule page and ``/api`` show it (the logged-in client of tests/plugins/web/conftest.py)."""

from __future__ import annotations

import html as htmllib
import re
from pathlib import Path

from starlette.testclient import TestClient

import tickwork
from tests.support.webhelpers import RECORD, form


def test_the_form_sets_overlap_and_the_pages_show_it(browser: tuple[TestClient, str], fresh: Path) -> None:
    c, csrf = browser
    page = c.get("/new").text
    for choice in ("skip", "buffer_one", "buffer_all", "cancel_other"):
        assert re.search(rf'<option value="{choice}"', page), choice
    fields = {"name": "sync", "expression": "*/5 * * * *", "target": RECORD, "overlap": "cancel_other"}
    saved = c.post("/new", data=form(csrf, do="save", **fields))
    assert saved.status_code == 303, saved.text
    with tickwork.connect(fresh) as admin:
        assert admin.get("sync").spec.overlap == "cancel_other"
    shown = htmllib.unescape(c.get("/schedules/sync").text)
    assert re.search(r"<dt>Overlap</dt><dd>cancel_other</dd>", shown)
    assert c.get("/api/schedules/sync").json()["overlap"] == "cancel_other"
    # The edit form shows the stored choice; a change is saved, a blank one is the default.
    edit = c.get("/edit/sync").text
    assert re.search(r'<option value="cancel_other"\s+selected', edit), edit
    changed = c.post("/edit/sync", data=form(csrf, do="save", **{**fields, "overlap": "buffer_all"}))
    assert changed.status_code == 303
    with tickwork.connect(fresh) as admin:
        assert admin.get("sync").spec.overlap == "buffer_all"
    blank = c.post("/edit/sync", data=form(csrf, do="save", **{**fields, "overlap": ""}))
    assert blank.status_code == 303
    with tickwork.connect(fresh) as admin:
        assert admin.get("sync").spec.overlap == "skip"
    assert "<dt>Overlap</dt>" not in c.get("/schedules/sync").text  # the default is not listed


def test_the_form_refuses_a_bad_bound_with_the_admin_apis_words(browser: tuple[TestClient, str], fresh: Path) -> None:
    c, csrf = browser
    fields = {"name": "sync", "expression": "*/5 * * * *", "target": RECORD, "overlap": "allow", "max_concurrent": "0"}
    page = c.post("/new", data=form(csrf, do="save", **fields))
    assert page.status_code == 400
    text = htmllib.unescape(page.text)
    assert "max_concurrent" in text
    with tickwork.connect(fresh) as admin:
        assert "sync" not in [i.name for i in admin.list()]
