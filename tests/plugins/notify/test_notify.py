"""The notify plugin with three real nodes on one store: a loopback webhook receiver (verifying
with the reference ``standardwebhooks`` package) and an SMTP server (``aiosmtpd``) started here
get exactly one notification per health change (firing, resolved, changed); what a repeat and a
resolved announcement say; ``tickwork notify test``; the rate limit."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from email import message_from_bytes, policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import standardwebhooks
from aiosmtpd.controller import Controller

import tickwork
from tests.support.paths import REPO
from tests.support.servers.base import free_port
from tickwork.config import parse
from tickwork.node import Node
from tickwork.plugin.manager import PluginManager
from tickwork.structures import AlertKind, Health, HealthChange, ScheduleHealth
from tickwork_notify import messages
from tickwork_notify.senders import RateLimit

SECRET = "whsec_" + base64.b64encode(b"tickwork-notify-test-key-5c1e9a7").decode()
WAIT_S = 60  # guard against a hung node; not a timing assertion
INTERVAL = 0.2  # [health] watch_interval of the nodes


def wait_for(what: str, condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


class Receiver:
    """A loopback webhook receiver that accepts only requests the reference package verifies."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.rejected = 0
        verifier = standardwebhooks.Webhook(SECRET)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                try:
                    verifier.verify(body, dict(self.headers.items()))
                except standardwebhooks.webhooks.WebhookVerificationError:
                    outer.rejected += 1
                    self.send_response(401)
                else:
                    outer.bodies.append(json.loads(body))
                    self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def changes(self) -> list[tuple[str, str, str]]:
        return [(b["tickwork"]["schedule"], b["tickwork"]["old"], b["tickwork"]["state"]) for b in self.bodies]


class Mailbox:
    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append((envelope.rcpt_tos, message_from_bytes(envelope.content, policy=policy.default)))
        return "250 OK"

    def lines(self) -> list[str]:
        return [line for _, m in self.messages for line in m.get_content().splitlines() if " (was " in line]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()


@pytest.fixture
def mailbox() -> Iterator[tuple[Mailbox, int]]:
    box = Mailbox()
    port = free_port()
    controller = Controller(box, hostname="127.0.0.1", port=port)
    controller.start()
    yield box, port
    controller.stop()


def notify_table(receiver: Receiver, smtp_port: int) -> dict[str, Any]:
    return {
        "webhook_url": receiver.url,
        "secret_env": "TICKWORK_NOTIFY_TEST_SECRET",
        "smtp_host": "127.0.0.1",
        "smtp_port": smtp_port,
        "mail_to": ["ops@example.com"],
    }


def test_three_nodes_send_one_notification_per_change(
    tmp_path: Path, receiver: Receiver, mailbox: tuple[Mailbox, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TICKWORK_NOTIFY_TEST_SECRET", SECRET)
    box, smtp_port = mailbox
    flag = tmp_path / "broken"
    store = {"path": str(tmp_path / "n.db")}
    base = {
        "store": store,
        "health": {"watch_interval": INTERVAL},
        "notify": notify_table(receiver, smtp_port),
    }
    with tickwork.connect(base) as admin:
        admin.store(write=True)
        admin.add("flaky", "1s", "tests.support.health_jobs:fails_while", args={"flag": str(flag)})
        admin.add("steady", "1s", "tests.support.health_jobs:fine")
        nodes = [
            tickwork.Node.from_config({**base, "scheduler": {"node_id": f"n{i}", "lookahead": 0}}) for i in (1, 2, 3)
        ]
        try:
            for node in nodes:
                node.start()
            wait_for(
                "both schedules to succeed",
                lambda: all(admin.history(schedule=n, status="succeeded", limit=1) for n in ("flaky", "steady")),
            )
            time.sleep(5 * INTERVAL)  # the sweeper's first sweeps record the healthy states
            assert receiver.changes() == []

            flag.write_text("")
            wait_for("the failing notification", lambda: ("flaky", "healthy", "failing") in receiver.changes())
            flag.unlink()
            wait_for("the recovery notification", lambda: ("flaky", "failing", "healthy") in receiver.changes())
            admin.disable("flaky")
            wait_for("the paused notification", lambda: ("flaky", "healthy", "paused") in receiver.changes())
            time.sleep(5 * INTERVAL)  # more sweeps: nothing is sent twice
        finally:
            for node in nodes:
                node.stop()

    expected = [("flaky", "healthy", "failing"), ("flaky", "failing", "healthy"), ("flaky", "healthy", "paused")]
    assert receiver.changes() == expected
    assert receiver.rejected == 0
    failing = receiver.bodies[0]
    assert failing["text"].startswith("tickwork: flaky is failing (was healthy): 1 failure, last success at ")
    assert "RuntimeError: failing while broken exists" in failing["text"]
    assert failing["tickwork"]["consecutive_failures"] == 1
    assert {b["tickwork"]["left_out"] for b in receiver.bodies} == {0}
    assert [b["tickwork"]["kind"] for b in receiver.bodies] == ["firing", "resolved", "changed"]
    assert receiver.bodies[1]["text"].startswith("tickwork: resolved: flaky is healthy (was failing): last success at ")
    # The same changes by e-mail (a message per sweep that saw changes), each once.
    wait_for("the e-mails", lambda: len(box.lines()) == 3)
    assert [line.split(" (was ")[0] for line in box.lines()] == [
        "flaky is failing",
        "resolved: flaky is healthy",
        "flaky is paused",
    ]
    assert {tuple(rcpt) for rcpt, _ in box.messages} == {("ops@example.com",)}
    assert box.messages[0][1]["Subject"] == "tickwork: flaky is failing"


def test_notify_test_sends_to_each_destination(
    tmp_path: Path, receiver: Receiver, mailbox: tuple[Mailbox, int]
) -> None:
    box, smtp_port = mailbox
    table = notify_table(receiver, smtp_port)
    lines = [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    config = tmp_path / "tickwork.toml"
    config.write_text(f'[store]\npath = "{tmp_path / "t.db"}"\n\n[notify]\n' + "\n".join(lines) + "\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "TICKWORK_NOTIFY_TEST_SECRET": SECRET}
    command = [sys.executable, "-m", "tickwork", "notify", "test", "-c", str(config)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=WAIT_S, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["sent to the webhook", "sent to the e-mail"]
    assert receiver.changes() == [("tickwork-notify-test", "healthy", "failing")]
    assert len(box.messages) == 1

    receiver.server.shutdown()  # the webhook is down: the command says so and fails
    receiver.server.server_close()
    down = subprocess.run(command, env=env, capture_output=True, text=True, timeout=WAIT_S, check=False)
    assert down.returncode == 1
    assert "sending to the webhook failed" in down.stderr
    assert "sent to the e-mail" in down.stdout

    unset = {k: v for k, v in env.items() if k != "TICKWORK_NOTIFY_TEST_SECRET"}
    missing = subprocess.run(command, env=unset, capture_output=True, text=True, timeout=WAIT_S, check=False)
    assert missing.returncode == 2
    assert "notify.secret_env: the environment variable 'TICKWORK_NOTIFY_TEST_SECRET' is not set" in missing.stderr


def test_each_kind_of_announcement_says_what_it_is() -> None:
    began = datetime(2026, 11, 29, 1, 0, 0, 250_000, tzinfo=UTC)
    now = began + timedelta(hours=4)
    failing = ScheduleHealth(Health.FAILING, "39 failures in a row, never succeeded", consecutive_failures=39)
    healthy = ScheduleHealth(Health.HEALTHY, "last success at 2026-11-29T05:00:02Z")
    firing = HealthChange("billing", Health.HEALTHY, failing, began)
    repeat = HealthChange("billing", Health.FAILING, failing, now, kind=AlertKind.REPEAT, since=began)
    resolved = HealthChange("billing", Health.FAILING, healthy, now)
    assert (firing.kind, resolved.kind) == (AlertKind.FIRING, AlertKind.RESOLVED)
    assert messages.line(firing) == "billing is failing (was healthy): 39 failures in a row, never succeeded"
    assert messages.line(repeat) == (
        "billing is still failing (since 2026-11-29T01:00:00Z): 39 failures in a row, never succeeded"
    )
    assert messages.line(resolved) == "resolved: billing is healthy (was failing): last success at 2026-11-29T05:00:02Z"
    body = messages.webhook_body(repeat)
    assert body["tickwork"]["kind"] == "repeat"
    assert body["tickwork"]["since"] == "2026-11-29T01:00:00.250000Z"
    assert body["tickwork"]["consecutive_failures"] == 39
    subjects = [messages.email([c], "t@example.com", ["ops@example.com"])["Subject"] for c in (repeat, resolved)]
    assert subjects == ["tickwork: billing is still failing", "tickwork: resolved: billing is healthy"]
    # A pause by hand is a change, not an alert; one by tickwork after failures is an alert.
    by_hand = ScheduleHealth(Health.PAUSED, "paused by ana ...")
    by_tickwork = ScheduleHealth(Health.PAUSED, "paused by tickwork ...", alerting=True)
    assert HealthChange("billing", Health.HEALTHY, by_hand, now).kind is AlertKind.CHANGED
    assert HealthChange("billing", Health.FAILING, by_tickwork, now).kind is AlertKind.FIRING


def test_the_rate_limit_counts_what_it_left_out() -> None:
    now = [0.0]
    limit = RateLimit(2, window=60, clock=lambda: now[0])
    assert [limit.allow() for _ in range(5)] == [True, True, False, False, False]
    assert limit.take_left_out() == 3
    now[0] = 59.9
    assert not limit.allow()
    now[0] = 60.0
    assert limit.allow()
    assert limit.take_left_out() == 1
    assert limit.take_left_out() == 0


class Listener:
    """A plugin object that records health changes, and may ask for the health sweep."""

    def __init__(self) -> None:
        self.changes: list[tuple[str, str, str]] = []

    @tickwork.hookimpl
    def tickwork_health_changed(self, changes: Sequence[HealthChange]) -> None:
        self.changes += [(c.schedule, c.old.value, c.new.state.value) for c in changes]


class AskingListener(Listener):
    @tickwork.hookimpl
    def tickwork_watch_health(self, node_id: str) -> bool:
        return node_id == "asker"


@pytest.mark.parametrize("asking", [False, True])
def test_a_node_sweeps_health_only_when_a_plugin_asks(tmp_path: Path, asking: bool) -> None:
    listener = AskingListener() if asking else Listener()
    node_id = "asker" if asking else "quiet"
    config = parse(
        {
            "store": {"path": str(tmp_path / "w.db")},
            "scheduler": {"node_id": node_id},
            "health": {"watch_interval": INTERVAL},
        }
    )
    node = Node(config, manager=PluginManager(extra=[listener]))
    node.start()
    try:
        node.admin.add("watched", "1h", "tests.support.health_jobs:fine")
        sweeping = f"tickwork-health-{node_id}" in {t.name for t in threading.enumerate()}
        assert sweeping is asking
        time.sleep(5 * INTERVAL)  # the first sweeps record the states
        node.admin.disable("watched")
        if asking:
            wait_for("the paused change", lambda: listener.changes == [("watched", "healthy", "paused")])
        else:
            time.sleep(5 * INTERVAL)
    finally:
        node.stop()
    assert listener.changes == ([("watched", "healthy", "paused")] if asking else [])
