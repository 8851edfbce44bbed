"""The sentry plugin: sentry-sdk, pointed at a loopback ingest server started here (a DSN with its
port), sends the Crons check-ins of a succeeding, a failing and a skipped fire, in order, with
the monitor config built from each schedule."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import sentry_sdk

import tickwork
from tickwork.config import load
from tickwork.node import Node
from tickwork.structures import ScheduleSpec
from tickwork_sentry.monitors import MAX_SLUG, schedule_of, slug


class Ingest:
    """Receives envelopes the way Sentry's ingest does and keeps their check-in items."""

    def __init__(self) -> None:
        self.check_ins: list[dict[str, Any]] = []
        self.paths: set[str] = set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                outer.paths.add(self.path)
                lines = body.split(b"\n")
                # An envelope: its header, then (item header, payload) pairs.
                for header, payload in zip(lines[1::2], lines[2::2], strict=False):
                    if json.loads(header).get("type") == "check_in":
                        outer.check_ins.append(json.loads(payload))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def by_slug(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for check_in in self.check_ins:
            out.setdefault(check_in["monitor_slug"], []).append(check_in)
        return out


@pytest.fixture
def ingest(monkeypatch: pytest.MonkeyPatch) -> Iterator[Ingest]:
    monkeypatch.delenv("SENTRY_DSN", raising=False)
    server = Ingest()
    server.thread.start()
    yield server
    sentry_sdk.get_client().close()
    # No DSN: an inactive client, as before the test. Without integrations: sentry-sdk's
    # SQLAlchemy integration, once set up, stays on every engine of the process (docs/sentry.md).
    sentry_sdk.init(default_integrations=False, auto_enabling_integrations=False)
    server.server.shutdown()
    server.server.server_close()


def test_check_ins_of_a_succeeding_a_failing_and_a_skipped_fire(tmp_path: Path, ingest: Ingest) -> None:
    config = tmp_path / "tickwork.toml"
    config.write_text(
        f'[store]\npath = "{tmp_path / "s.db"}"\n\n[scheduler]\nnode_id = "crons"\n\n'
        f'[sentry]\ndsn = "http://public@127.0.0.1:{ingest.port}/1"\nenvironment = "test"\ncheckin_margin = 2\n'
    )
    with tickwork.connect(config) as admin:
        admin.store(write=True)
        admin.add(
            "Nightly Report",
            "0 3 * * *",
            "tests.support.health_jobs:fine",
            tz="Europe/Oslo",
            misfire="once",
            timeout=90,
        )
        admin.add(
            "broken",
            "*/5 * * * *",
            "tests.support.health_jobs:fails_while",
            args={"flag": str(config)},  # the config file exists: the job fails
            misfire="once",
        )
        admin.add("hourly", "1h", "tests.support.health_jobs:fine")  # misfire skip: a late claim is skipped
        for name in ("Nightly Report", "broken", "hourly"):
            admin.trigger(name)
    loaded = load(config)
    # Every fire is claimed some milliseconds after it was due: a 1 ms grace skips "hourly".
    node = Node(replace(loaded, scheduler=loaded.scheduler.replace(misfire_grace=0.001)))
    node.open()
    try:
        node.engine.tick()
    finally:
        node.shutdown()  # waits for the runs, then flushes the check-ins

    assert ingest.paths == {"/api/1/envelope/"}
    got = ingest.by_slug()
    assert set(got) == {"nightly-report", "broken", "hourly"}
    assert [c["status"] for c in got["nightly-report"]] == ["in_progress", "ok"]
    assert [c["status"] for c in got["broken"]] == ["in_progress", "error"]
    assert [c["status"] for c in got["hourly"]] == ["error"]
    for slug_name in ("nightly-report", "broken"):
        start, end = got[slug_name]
        assert start["check_in_id"] == end["check_in_id"]
        assert end["duration"] >= 0
    assert {c["environment"] for c in ingest.check_ins} == {"test"}
    assert got["nightly-report"][0]["monitor_config"] == {
        "schedule": {"type": "crontab", "value": "0 3 * * *"},
        "timezone": "Europe/Oslo",
        "checkin_margin": 2,
        "max_runtime": 2,
    }
    assert got["broken"][1]["monitor_config"]["schedule"] == {"type": "crontab", "value": "*/5 * * * *"}
    assert got["broken"][1]["monitor_config"]["max_runtime"] == 5  # the default timeout, 300 s
    assert got["hourly"][0]["monitor_config"]["schedule"] == {"type": "interval", "value": 1, "unit": "hour"}
    with tickwork.connect(config) as admin:
        [skipped] = admin.history(schedule="hourly")
        assert skipped.status.value == "skipped"


def test_slugs_and_schedules() -> None:
    assert slug("Billing export / nightly") == "billing-export-nightly"
    assert slug("x" * 80) == "x" * MAX_SLUG
    assert slug("job", "prod-") == "prod-job"
    assert slug("!!!") == "tickwork"

    def spec(kind: str, expression: str) -> ScheduleSpec:
        return ScheduleSpec("s", kind, expression, "tests.support.health_jobs:fine")

    assert schedule_of(spec("interval", "90s")) == {"type": "interval", "value": 2, "unit": "minute"}
    assert schedule_of(spec("interval", "2d")) == {"type": "interval", "value": 2, "unit": "day"}
    assert schedule_of(spec("interval", "30m")) == {"type": "interval", "value": 30, "unit": "minute"}
    assert schedule_of(spec("cron", "*/10 * * * * *")) is None  # seconds: Sentry has no such crontab
