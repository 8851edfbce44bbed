"""A hand-off no worker reports on never stalls in silence: a real Celery worker over RabbitMQ
WITHOUT the worker side (``tickwork_celery.worker.install(app)`` not called) runs the tasks and
reports nothing. Within ``pickup_timeout`` (short here, through the setting) the node logs one
WARNING per stuck run naming the executor, the schedules and the likely cause; health says
``stuck``; a real ``tickwork check`` exits 1 naming them; the state-based notification goes out;
and ``tickwork jobs release`` ends the run, its history row naming who released it."""

from __future__ import annotations

import getpass
import itertools
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.handoff import harness
from tests.support.paths import REPO
from tests.support.servers.configs import ConfigFor
from tickwork.admin.health import Health
from tickwork.structures import RunStatus

pytestmark = pytest.mark.slow

BARE = "tests.support.handoff.celery_app_bare"
WAIT_S = 90  # guard against a hung process; not a timing assertion


class Hook:
    """A loopback webhook receiver: the notifications' bodies, in order."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                outer.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def changes(self) -> list[tuple[str, str, str]]:
        return [(b["tickwork"]["schedule"], b["tickwork"]["old"], b["tickwork"]["state"]) for b in self.bodies]


@pytest.fixture
def hook() -> Iterator[Hook]:
    h = Hook()
    thread = threading.Thread(target=h.server.serve_forever, daemon=True)
    thread.start()
    yield h
    h.server.shutdown()
    h.server.server_close()


def cli(config: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tickwork", *args, "-c", str(config)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=WAIT_S,
        check=False,
    )


def test_a_worker_without_the_worker_side_is_reported_stuck_and_released(
    amqp_url: str, tmp_path: Path, config_for: ConfigFor, hook: Hook
) -> None:
    store_config = config_for("postgres", migrated=True)
    queue = harness.queue_name()
    log = tmp_path / "executions.jsonl"
    config = harness.write_config(
        tmp_path / "n1.toml",
        store_config.store,
        "n1",
        "celery",
        {"app": f"{BARE}:app", "queue": queue, "pickup_timeout": 2},
    )
    config.write_text(config.read_text() + f'[health]\nwatch_interval = 0.5\n[notify]\nwebhook_url = "{hook.url}"\n')
    env = harness.env_for(config, log, HANDOFF_BROKER=amqp_url)
    with harness.admin(config) as admin:
        admin.add("report", "* * * * * *", "handoff.work", executor="celery", args={"n": 1})
        admin.add("digest", "* * * * * *", "handoff.work", executor="celery", args={"n": 2})
    worker = harness.celery_worker(queue, env, tmp_path / "worker.log", app=BARE)
    node_log = tmp_path / "n1.log"
    node = harness.start_node(config, 120, env, node_log)
    try:
        with harness.admin(config) as admin:

            def states() -> dict[str, Health]:
                found = {}
                for info in admin.list():
                    assert info.health is not None
                    found[info.name] = info.health.state
                return found

            harness.wait_until(
                lambda: states() == {"report": Health.STUCK, "digest": Health.STUCK}, WAIT_S, "both schedules stuck"
            )
            # The worker did run the tasks: what it lacks is the reporting, not the work.
            assert harness.executions(log)
            stuck = {r.schedule: r for r in harness.history(admin.store()) if r.status is RunStatus.SUBMITTED}
            assert set(stuck) == {"report", "digest"}
            harness.wait_until(
                lambda: all(
                    any(r.status is RunStatus.SKIPPED and r.schedule == name for r in harness.history(admin.store()))
                    for name in stuck
                ),
                WAIT_S,
                "fires skipped behind both stuck hand-offs",
            )
            info = admin.get("report")
            assert info.health is not None and "skipped behind it" in info.health.reason

            # `tickwork check`, as a probe runs it: exit 1, naming both.
            checked = cli(config, env, "check")
            assert checked.returncode == 1, checked.stdout + checked.stderr
            assert "report" in checked.stdout and "digest" in checked.stdout and "stuck" in checked.stdout

            harness.wait_until(
                lambda: {("report", "stuck"), ("digest", "stuck")} <= {(n, new) for n, _, new in hook.changes()},
                WAIT_S,
                "the stuck notifications",
            )
            # Each schedule went from healthy to stuck, through late when fires were skipped behind
            # the hand-off before pickup_timeout declared it stuck, each change said once.
            for name in ("report", "digest"):
                said = [(old, new) for n, old, new in hook.changes() if n == name]
                assert said[0][0] == "healthy" and said[-1][1] == "stuck", said
                assert all(a[1] == b[0] for a, b in itertools.pairwise(said)), said
                assert {new for _, new in said} <= {"late", "stuck"}, said

            # One WARNING per stuck run, however many looks: each run is named in one line only.
            text = node_log.read_text()
            warnings = [line for line in text.splitlines() if "not reported started by any worker" in line]
            assert warnings and all("WARNING" in line and "celery" in line for line in warnings)
            assert all("tickwork_celery.worker.install(app)" in line for line in warnings)
            for name, run in stuck.items():
                assert sum(f"run {run.id} of {name!r}" in line for line in warnings) == 1, warnings

            # Release by the command line: the row ends cancelled, naming who released it.
            released = cli(config, env, "jobs", "release", "report")
            assert released.returncode == 0, released.stderr
            assert f"released run {stuck['report'].id} of report" in released.stdout
            row = admin.store().get_run(stuck["report"].id)
            assert row is not None and row.status is RunStatus.CANCELLED
            assert f"released by {getpass.getuser()}" in (row.error or "")
    finally:
        harness.stop(node)
        harness.stop(worker)
