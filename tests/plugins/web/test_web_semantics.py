"""The dashboard's schedule page and ``/api`` show a pause (its note, who, until when) and the
rarer schedule options, with the jittered next fires."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from pathlib import Path

from starlette.testclient import TestClient

import tickwork
import tickwork_web
from tests.support.webhelpers import RECORD, TOKEN, write_config
from tickwork.scheduling.firetimes import jitter_offset


def test_the_schedule_page_shows_the_pause_and_the_options(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with tickwork.connect(config) as admin:
        admin.add("jittered", "0 * * * *", RECORD, jitter="10m", pause_after_failures=4, max_catchup=2)
        admin.add("held", "*/5 * * * *", RECORD, end_at="2099-01-01T00:00:00Z")
        paused = admin.pause("held", "waiting for the vendor's fix", until=timedelta(hours=2), by="alice")
    assert paused.pause is not None and paused.pause.until is not None
    offset = jitter_offset("jittered", timedelta(minutes=10))
    with TestClient(tickwork_web.app(config), follow_redirects=False) as c:
        page = html.unescape(c.get("/schedules/held").text)
        assert "paused" in page and "waiting for the vendor's fix (alice" in page
        assert paused.pause.until.strftime("%Y-%m-%d") in page  # the until, as the page writes times
        assert "Ends" in page
        page = html.unescape(c.get("/schedules/jittered").text)
        assert f"+{offset.total_seconds():.3f} s on every fire" in page
        assert "4 failed fires in a row" in page and "2 missed fires" in page
        body = c.get("/api/schedules/jittered").json()
        # Every next fire lies at the offset past the hour.
        assert all(
            t.endswith(f"{int(offset.total_seconds()) // 60:02d}:{offset.seconds % 60:02d}.{offset.microseconds:06d}Z")
            for t in body["next_fires"]
        )
        assert body["jitter"] == 600.0 and body["pause"] is None
        held = c.get("/api/schedules/held").json()
        assert held["pause"]["note"] == "waiting for the vendor's fix" and held["pause"]["by"] == "alice"
        assert held["end_at"] == "2099-01-01T00:00:00Z"


def test_the_form_sets_the_concurrency_options_and_the_pages_show_them(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with tickwork.connect(config) as admin:
        admin.add("plain", "0 * * * *", RECORD)  # creates the schema, like the other tests here
    with TestClient(tickwork_web.app(config, token=TOKEN), follow_redirects=False) as c:
        assert c.post("/login", data={"token": TOKEN, "name": "alice"}).status_code == 303
        found = re.search(r'name="csrf" value="([0-9a-f]+)"', c.get("/new").text)
        assert found
        fields = {
            "csrf": found.group(1),
            "enabled": "1",
            "do": "save",
            "name": "wide",
            "expression": "* * * * *",
            "target": RECORD,
            "overlap": "allow",
            "max_concurrent": "3",
            "concurrency_key": "billing",
            "concurrency_limit": "2",
        }
        assert c.post("/new", data=fields).status_code == 303
        page = html.unescape(c.get("/schedules/wide").text)
        # As `tickwork jobs show` words them (tickwork.scheduling.options.shown), the note below.
        assert '<dt>Overlap</dt><dd>allow <div class="sub">at most 3 at once; not retried</div></dd>' in page
        assert "<dt>Concurrency</dt><dd>key billing, at most 2 at once</dd>" in page
        body = c.get("/api/schedules/wide").json()
        assert (body["overlap"], body["max_concurrent"], body["concurrency_key"], body["concurrency_limit"]) == (
            "allow",
            3,
            "billing",
            2,
        )
        edit = html.unescape(c.get("/edit/wide").text)
        assert 'value="billing"' in edit
    with tickwork.connect(config) as admin:
        spec = admin.get("wide").spec
        assert (spec.overlap, spec.max_concurrent, spec.concurrency_key, spec.concurrency_limit) == (
            "allow",
            3,
            "billing",
            2,
        )
